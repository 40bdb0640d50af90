// SandboxPolicy: what a child may read, write, reach and see, as requested.
//
// A SandboxPolicy only exists validated: it comes out of parse()/fromJson() or
// make(), each of which checks every field. Paths are kept as written (with
// `~` and relative forms); derive() (rules.h) turns them into DerivedRules.
//
// JSON format (field names follow Anthropic's sandbox-runtime settings):
//   {"filesystem": {"denyRead": [], "allowRead": [], "allowWrite": [], "denyWrite": [],
//                   "allowWriteSystemPaths": false},
//    "network": {"allowedDomains": [], "deniedDomains": [], "allowUnixSockets": [],
//                "allowLocalBinding": false},
//    "env": {"allow": []},
//    "limits": {"memoryBytes": 0, "pids": 0, "cpuSeconds": 0, "fileSizeBytes": 0}}
// Unknown keys are errors.
//
// OMITTED MEANS DEFAULT, everywhere: a section or field that a policy leaves
// out takes the bundled default policy's value (policy/default.json: credential
// stores read-denied, "." writable, env PATH HOME LANG TERM, no network); an
// explicit value, `[]` included, replaces it. In JSON that is a missing key; in
// C++ it is a member left out of the designated initialiser, because every
// member below starts at the bundled default's value:
//   make({.allowWrite = {"/srv/out"}}, {.allowedDomains = {"github.com"}}, {})
// keeps the default denyRead and env.allow; `.denyRead = {}` empties it.
// A per-call policy (RunOptions::policy) is a policy like any other: what it
// leaves out is the bundled default's, never the session's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace stockade {

namespace detail {
// The bundled default policy's values (generated from policy/default.json at
// build time): the starting value of every member below.
struct BundledDefaults {
  std::vector<std::string> denyRead, allowRead, allowWrite, denyWrite;
  bool allowWriteSystemPaths;
  std::vector<std::string> allowedDomains, deniedDomains, allowUnixSockets;
  bool allowAllUnixSockets;
  bool allowLocalBinding;
  std::vector<std::string> envAllow;
  std::uint64_t memoryBytes, pids, cpuSeconds, fileSizeBytes;
};
const BundledDefaults& bundledDefaults() noexcept;
}  // namespace detail

// Paths: absolute, "~/..." or relative to the working directory. In
// denyRead, allowRead and denyWrite a path with `*`, `?` or `[` is a glob
// (`**` crosses directories) that stands for the paths it matches when the
// rules are derived; `\` makes the next character literal. A JSON entry
// {"path": P, "literal": true} is P with every glob character escaped so.
// allowWrite and allowUnixSockets take no globs; in allowWrite and denyWrite
// a trailing "/**" names the directory itself.
struct FilesystemPolicy {
  std::vector<std::string> denyRead = detail::bundledDefaults().denyRead;      // masked
  std::vector<std::string> allowRead = detail::bundledDefaults().allowRead;    // carve-outs inside denied trees
  std::vector<std::string> allowWrite = detail::bundledDefaults().allowWrite;  // the only writable trees
  std::vector<std::string> denyWrite = detail::bundledDefaults().denyWrite;    // read-only inside writable trees
  // A writable path that is "/", lies in a system tree (/etc, /usr, /bin,
  // /sbin, /lib*, /boot, /dev, /proc, /sys, /var except /var/tmp, /run) or
  // is (or holds) the home directory is refused by derive() unless this is
  // true: such a grant is almost always an accident (the default policy's
  // "." run from /etc). Shown in the derived rules and their fingerprint.
  bool allowWriteSystemPaths = detail::bundledDefaults().allowWriteSystemPaths;
  bool operator==(const FilesystemPolicy&) const = default;
};

struct NetworkPolicy {
  // "host", "*.host", "host:port", "[v6]:port"
  std::vector<std::string> allowedDomains = detail::bundledDefaults().allowedDomains;
  // Win over allowedDomains; also "*" (every host) and "*:port".
  std::vector<std::string> deniedDomains = detail::bundledDefaults().deniedDomains;
  std::vector<std::string> allowUnixSockets = detail::bundledDefaults().allowUnixSockets;
  bool allowAllUnixSockets = detail::bundledDefaults().allowAllUnixSockets;  // socket(AF_UNIX) and every socket file
  bool allowLocalBinding = detail::bundledDefaults().allowLocalBinding;
  bool operator==(const NetworkPolicy&) const = default;
};

struct EnvPolicy {
  std::vector<std::string> allow = detail::bundledDefaults().envAllow;  // host variable names the child inherits
  bool operator==(const EnvPolicy&) const = default;
};

// 0 means "no limit".
struct Limits {
  std::uint64_t memoryBytes = detail::bundledDefaults().memoryBytes;
  std::uint64_t pids = detail::bundledDefaults().pids;
  std::uint64_t cpuSeconds = detail::bundledDefaults().cpuSeconds;
  std::uint64_t fileSizeBytes = detail::bundledDefaults().fileSizeBytes;
  bool operator==(const Limits&) const = default;
};

// Every field of a policy, in the order of the JSON format.
enum class PolicyField : unsigned {
  kDenyRead, kAllowRead, kAllowWrite, kDenyWrite, kAllowWriteSystemPaths,
  kAllowedDomains, kDeniedDomains, kAllowUnixSockets, kAllowAllUnixSockets, kAllowLocalBinding,
  kEnvAllow,
  kMemoryBytes, kPids, kCpuSeconds, kFileSizeBytes,
};
inline constexpr PolicyField kAllPolicyFields[] = {
    PolicyField::kDenyRead,       PolicyField::kAllowRead,        PolicyField::kAllowWrite,
    PolicyField::kDenyWrite,      PolicyField::kAllowWriteSystemPaths, PolicyField::kAllowedDomains,
    PolicyField::kDeniedDomains,  PolicyField::kAllowUnixSockets, PolicyField::kAllowAllUnixSockets,
    PolicyField::kAllowLocalBinding, PolicyField::kEnvAllow,
    PolicyField::kMemoryBytes,    PolicyField::kPids,             PolicyField::kCpuSeconds,
    PolicyField::kFileSizeBytes,
};
// The field's JSON path: "filesystem.denyRead", "limits.pids", ...
std::string_view policyFieldPath(PolicyField field) noexcept;

// Where a field's value came from.
enum class ValueSource {
  kDefault,  // left out: the bundled default's value
  kGiven,    // written in the policy
};

// A key of Anthropic's sandbox-runtime settings that the policy accepted
// without it being a stockade field (policy/srt_settings.h).
struct PolicyNote {
  enum class Kind {
    kNotApplicable,  // no meaning on Linux or in stockade; ignored
    kStronger,       // stockade enforces more than the key asks for
  };
  Kind kind;
  std::string path;  // "allowAppleEvents", "credentials.files[0].mode"
  std::string why;   // "macOS only"
  bool operator==(const PolicyNote&) const = default;
};

// A validation failure: `path` is the JSON path of the offending value
// (`network.allowedDomains[2]`), `message` says what is wrong and what to do.
// parse() reports every problem of a text: the first here, the others in
// `more` (the file's structure in document order, then the values).
struct PolicyError {
  std::string path;
  std::string message;
  std::vector<PolicyError> more;
  // "path: message" of the first problem.
  std::string first() const { return path.empty() ? message : path + ": " + message; }
  // Every problem, "; "-separated.
  std::string text() const {
    std::string out = first();
    for (const auto& m : more) out += "; " + m.first();
    return out;
  }
};

class SandboxPolicy {
 public:
  // Parses and validates JSON text; a missing key takes the bundled default's
  // value. Never throws.
  static std::variant<SandboxPolicy, PolicyError> parse(std::string_view json) noexcept;
  // As parse(), throwing SandboxError{kInvalidPolicy} naming the field.
  static SandboxPolicy fromJson(std::string_view json);
  // Validates parts built in code (members left out hold the bundled
  // default's values); throws SandboxError{kInvalidPolicy}.
  static SandboxPolicy make(FilesystemPolicy fs, NetworkPolicy net, EnvPolicy env,
                            Limits limits = {});
  // The bundled default policy (policy/default.json, compiled in).
  static SandboxPolicy defaults();
  static std::string_view defaultJson() noexcept;

  // Where `field`'s value came from. For parse(): kGiven when the text has
  // the key. For make(), which cannot tell a member left out from one written
  // with the same value: kDefault when the value equals the bundled default's.
  ValueSource source(PolicyField field) const noexcept;
  // The sandbox-runtime keys accepted beside the fields, in document order.
  const std::vector<PolicyNote>& notes() const noexcept { return notes_; }

  const FilesystemPolicy& filesystem() const noexcept { return fs_; }
  const NetworkPolicy& network() const noexcept { return net_; }
  const EnvPolicy& env() const noexcept { return env_; }
  const Limits& limits() const noexcept { return limits_; }

  // Re-serialises the policy (all sections, fields as written).
  std::string toJson() const;

  // Equal values; where they came from does not count.
  bool operator==(const SandboxPolicy& o) const noexcept {
    return fs_ == o.fs_ && net_ == o.net_ && env_ == o.env_ && limits_ == o.limits_;
  }

 private:
  SandboxPolicy() = default;
  static SandboxPolicy assemble(FilesystemPolicy fs, NetworkPolicy net, EnvPolicy env, Limits limits,
                                unsigned given, std::vector<PolicyNote> notes);
  FilesystemPolicy fs_;
  NetworkPolicy net_;
  EnvPolicy env_;
  Limits limits_;
  unsigned given_ = 0;  // bit (1 << PolicyField) set: the field's source is kGiven
  std::vector<PolicyNote> notes_;
};

}  // namespace stockade
