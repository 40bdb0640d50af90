// SandboxPolicy: what a child may read, write, reach and see, as requested.
//
// A SandboxPolicy only exists validated: it comes out of parse()/fromJson() or
// make(), each of which checks every field. Paths are kept as written (with
// `~` and relative forms); derive() (rules.h) turns them into DerivedRules.
//
// JSON format (field names follow Anthropic's sandbox-runtime settings):
//   {"filesystem": {"denyRead": [], "allowRead": [], "allowWrite": [], "denyWrite": []},
//    "network": {"allowedDomains": [], "deniedDomains": [], "allowUnixSockets": [],
//                "allowLocalBinding": false},
//    "env": {"allow": []},
//    "limits": {"memoryBytes": 0, "pids": 0, "cpuSeconds": 0, "fileSizeBytes": 0}}
// Every section and field is optional; unknown keys are errors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace stockade {

struct FilesystemPolicy {
  std::vector<std::string> denyRead;    // paths or globs (`**/*.pem`)
  std::vector<std::string> allowRead;   // carve-outs inside denied trees
  std::vector<std::string> allowWrite;  // the only writable trees
  std::vector<std::string> denyWrite;   // read-only inside writable trees
  bool operator==(const FilesystemPolicy&) const = default;
};

struct NetworkPolicy {
  std::vector<std::string> allowedDomains;  // "host", "*.host", "host:port", "[v6]:port"
  std::vector<std::string> deniedDomains;   // win over allowedDomains
  std::vector<std::string> allowUnixSockets;
  bool allowLocalBinding = false;
  bool operator==(const NetworkPolicy&) const = default;
};

struct EnvPolicy {
  std::vector<std::string> allow;  // host variable names the child inherits
  bool operator==(const EnvPolicy&) const = default;
};

// 0 means "no limit".
struct Limits {
  std::uint64_t memoryBytes = 0;
  std::uint64_t pids = 0;
  std::uint64_t cpuSeconds = 0;
  std::uint64_t fileSizeBytes = 0;
  bool operator==(const Limits&) const = default;
};

// A validation failure: `path` is the JSON path of the offending value
// (`network.allowedDomains[2]`), `message` says what is wrong and what to do.
struct PolicyError {
  std::string path;
  std::string message;
  std::string text() const { return path.empty() ? message : path + ": " + message; }
};

class SandboxPolicy {
 public:
  // Parses and validates JSON text. Never throws.
  static std::variant<SandboxPolicy, PolicyError> parse(std::string_view json) noexcept;
  // As parse(), throwing SandboxError{kInvalidPolicy} naming the field.
  static SandboxPolicy fromJson(std::string_view json);
  // Validates parts built in code; throws SandboxError{kInvalidPolicy}.
  static SandboxPolicy make(FilesystemPolicy fs, NetworkPolicy net, EnvPolicy env,
                            Limits limits = {});
  // The bundled default policy (policy/default.json, compiled in).
  static SandboxPolicy defaults();
  static std::string_view defaultJson() noexcept;

  const FilesystemPolicy& filesystem() const noexcept { return fs_; }
  const NetworkPolicy& network() const noexcept { return net_; }
  const EnvPolicy& env() const noexcept { return env_; }
  const Limits& limits() const noexcept { return limits_; }

  // Re-serialises the policy (all sections, fields as written).
  std::string toJson() const;

  bool operator==(const SandboxPolicy&) const = default;

 private:
  SandboxPolicy() = default;
  static SandboxPolicy assemble(FilesystemPolicy fs, NetworkPolicy net, EnvPolicy env, Limits limits);
  FilesystemPolicy fs_;
  NetworkPolicy net_;
  EnvPolicy env_;
  Limits limits_;
};

}  // namespace stockade
