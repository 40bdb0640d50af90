// DerivedRules: what stockade enforces, derived from a SandboxPolicy against
// the live filesystem. This, never the requested policy, is what the manager
// admits, narrows, fingerprints and re-checks before every spawn.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "stockade/policy.h"

namespace stockade {

// One normalised network destination pattern: lower case, no trailing dot,
// IP literals canonical ("127.0.0.1", "::1" without brackets).
// `host` is "name", "*.suffix" (subdomains only, never the apex), an address,
// or "*" (every host; only in deniedDomains).
struct DomainRule {
  std::string host;
  std::optional<std::uint16_t> port;  // nullopt: any port

  bool isWildcard() const noexcept { return host.starts_with("*."); }
  // "*": every host (deniedDomains only).
  bool matchesEveryHost() const noexcept { return host == "*"; }
  // "host", "host:443", "[::1]:8080", "*.example.com".
  std::string text() const;
  // True when every destination this rule matches is matched by `outer`.
  bool within(const DomainRule& outer) const;
  // True when this rule matches the (normalised) host and port.
  bool matches(std::string_view host, std::uint16_t port) const;
  auto operator<=>(const DomainRule&) const = default;
};

// A name pattern protected at any depth of every writable tree, whether or
// not it exists: policy/protected_names.cc holds the table and the reasons.
struct ProtectedName {
  std::string pattern;            // '/'-separated components; "*" one component, "**" any number
  bool nonDirectoryOnly = false;  // only a non-directory at the name (a `.git` file), not a directory
  // The pattern, with " (not a directory)" when nonDirectoryOnly.
  std::string text() const;
  auto operator<=>(const ProtectedName&) const = default;
};

// What derive() needs from the world besides the policy.
struct DeriveContext {
  std::string home;                   // for `~`; empty: `~` is an error
  std::optional<std::string> cwd;     // base for relative paths; none: they are errors
  // How the caller's own interface names `cwd`, for the messages that ask
  // for another one: the CLI's flag ("--cwd"), the daemon's JSON field
  // ("\"workspace\""), the library's argument. Empty: "DeriveContext::cwd".
  std::string cwdName;
  std::optional<std::string> tmpdir;  // the child's private TMPDIR, writable by default
  // The account database (passwd(5) format) whose home directories are, like
  // `home`, never writable without filesystem.allowWriteSystemPaths; empty: none.
  std::string accounts = "/etc/passwd";
};

class DerivedRules {
 public:
  struct Filesystem {
    std::vector<std::string> denyRead;          // real paths: named ones and glob matches
    std::vector<std::string> denyReadPatterns;  // globs as written, kept for audit
    std::vector<std::string> allowRead;         // real paths carved out of denied trees (and glob matches)
    std::vector<std::string> allowReadPatterns;  // globs as written, kept for audit
    std::vector<std::string> allowWrite;        // real paths of the user's writable trees
    std::vector<std::string> defaultWrite;      // /dev/null, /dev/tty, ..., TMPDIR
    std::vector<std::string> denyWrite;         // the user's own write denies (and glob matches)
    std::vector<std::string> denyWritePatterns;  // globs as written: their matches when derived are in denyWrite
    std::vector<std::string> mandatoryDenyWrite;  // rc files, .git/hooks, ... under writable trees
    bool allowWriteSystemPaths = false;  // the policy's opt-in (policy.h): allowWrite may name system trees
    // Names protected at any depth of the writable trees (rc files, .git/hooks,
    // editor and agent settings), decided at each write by the broker.
    std::vector<ProtectedName> protectedNames;
    bool operator==(const Filesystem&) const = default;
  };
  struct Network {
    std::vector<DomainRule> allowedDomains;
    std::vector<DomainRule> deniedDomains;
    std::vector<std::string> allowUnixSockets;  // real paths
    bool allowAllUnixSockets = false;
    bool allowLocalBinding = false;
    // socket(AF_UNIX) is allowed: every socket, or some (which cannot be told apart).
    bool unixSocketsAllowed() const noexcept { return allowAllUnixSockets || !allowUnixSockets.empty(); }
    bool operator==(const Network&) const = default;
  };

  const Filesystem& filesystem() const noexcept { return fs_; }
  const Network& network() const noexcept { return net_; }
  const std::vector<std::string>& envAllow() const noexcept { return env_; }
  const Limits& limits() const noexcept { return limits_; }

  // Canonical JSON: sorted keys, sorted and de-duplicated lists, no spaces.
  // Equal rules give byte-equal text.
  std::string toJson() const;
  // Lower-case hex SHA-256 of toJson().
  std::string fingerprint() const;

  // Read decision for an absolute, normalised path: the most specific
  // denyRead/allowRead entry that contains it decides; a tie denies.
  bool readable(std::string_view path) const;
  // Write decision: inside no denyWrite/mandatoryDenyWrite tree (denies win
  // at any depth), under no protected name (taken as a non-directory, the
  // stricter reading), and inside some defaultWrite tree, or inside some
  // allowWrite tree and readable (a read-denied path is masked: nothing can
  // be written there).
  bool writable(std::string_view path) const;

  bool operator==(const DerivedRules&) const = default;

 private:
  friend class RulesBuilder;
  DerivedRules() = default;
  Filesystem fs_;
  Network net_;
  std::vector<std::string> env_;
  Limits limits_;
};

// A derivation failure names the policy field and value (`filesystem.allowWrite[0]`).
using DeriveResult = std::variant<DerivedRules, PolicyError>;
DeriveResult derive(const SandboxPolicy& policy, const DeriveContext& context);
// The context of the calling process: $HOME (or the passwd entry), getcwd(), no TMPDIR.
DeriveContext currentContext();

// The first entry on which a candidate is wider than its base.
struct Widening {
  std::string axis;   // "filesystem.allowWrite", "network.allowedDomains", "env.allow", ...
  std::string entry;  // the offending entry as text
  std::string message;  // `filesystem.allowWrite: "/etc" is not inside any writable path of the base policy`
};
// The axes narrowing() compares; combine with |.
enum class RuleAxis : unsigned {
  kRead = 1,      // filesystem.denyRead / allowRead
  kWrite = 2,     // filesystem.allowWrite / denyWrite / mandatory denies
  kNetwork = 4,   // network.*: domains, unix sockets, local binding
  kEnv = 8,       // env.allow
  kLimits = 16,   // limits.*
  kAll = 31,
};
constexpr RuleAxis operator|(RuleAxis a, RuleAxis b) {
  return static_cast<RuleAxis>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}

// nullopt: candidate is narrower than or equal to base on every axis asked for.
std::optional<Widening> narrowing(const DerivedRules& base, const DerivedRules& candidate,
                                  RuleAxis axes = RuleAxis::kAll);

// Network rules that allow only what both `a` and `b` allow (a conservative
// intersection: every allowed entry of one that lies inside an allowed entry
// of the other; the denies of both; local binding only if both allow it).
// Used for a child whose own per-call network rules must also follow every
// later narrowing of the session's.
DerivedRules::Network intersectNetworks(const DerivedRules::Network& a, const DerivedRules::Network& b);

// Per-axis added/removed entries from a to b, and whether b widens a.
struct RulesDiff {
  struct Axis {
    std::string name;
    std::vector<std::string> added;
    std::vector<std::string> removed;
  };
  std::vector<Axis> axes;              // only axes that changed
  std::optional<Widening> widening;    // first widening of b over a, if any
  bool empty() const noexcept { return axes.empty(); }
  std::string toJson() const;
};
RulesDiff diff(const DerivedRules& a, const DerivedRules& b);

}  // namespace stockade
