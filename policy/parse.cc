// SandboxPolicy parsing and validation. Untrusted input: never throws out of
// parse(), never recurses on attacker-controlled depth, names every error.
#include <nlohmann/json.hpp>

#include <set>

#include "policy/domain.h"
#include "policy/paths.h"
#include "policy/text.h"
#include "stockade/error.h"
#include "stockade/policy.h"

namespace stockade {
namespace policy_internal {
extern const std::string_view kDefaultPolicyJson;
}  // namespace policy_internal

namespace {

using nlohmann::json;

constexpr std::size_t kMaxPolicyBytes = 1 << 20;
constexpr int kMaxDepth = 16;
constexpr std::size_t kMaxPathLength = 4096;

struct Invalid {
  PolicyError error;
};

[[noreturn]] void fail(std::string path, std::string message) {
  throw Invalid{{std::move(path), std::move(message)}};
}


// Nesting depth of JSON text, counted outside strings, so a hostile file of
// a million "[" is refused before the recursive parser sees it.
int nestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') inString = false;
      continue;
    }
    if (c == '"') inString = true;
    else if (c == '{' || c == '[') deepest = std::max(deepest, ++depth);
    else if (c == '}' || c == ']') --depth;
  }
  return deepest;
}

const char* typeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a fractional number";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "a number";
    default: return "an unsupported value";
  }
}

void checkKeys(const json& obj, const std::string& path, std::initializer_list<std::string_view> allowed) {
  if (!obj.is_object()) fail(path, std::string("must be an object, not ") + typeName(obj));
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (auto a : allowed) known = known || it.key() == a;
    if (!known) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(path.empty() ? it.key() : path + "." + it.key(), "unknown key; expected one of: " + list);
    }
  }
}

// The bit of `field` in SandboxPolicy::given_.
constexpr unsigned bit(PolicyField field) { return 1u << static_cast<unsigned>(field); }

// A present key replaces `out` (which holds the default); a missing one leaves it.
void stringList(const json& obj, const std::string& section, const char* key, PolicyField field,
                std::vector<std::string>& out, unsigned& given) {
  auto it = obj.find(key);
  if (it == obj.end()) return;
  given |= bit(field);
  std::string path = section + "." + key;
  if (!it->is_array()) fail(path, std::string("must be an array of strings, not ") + typeName(*it));
  out.clear();
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& v = (*it)[i];
    std::string at = path + "[" + std::to_string(i) + "]";
    if (!v.is_string()) fail(at, std::string("must be a string, not ") + typeName(v));
    out.push_back(v.get<std::string>());
  }
}

enum class GlobUse { kAllowed, kRefused };

void validatePath(const std::string& at, const std::string& p, GlobUse globs) {
  if (p.empty()) fail(at, "is empty; give a path such as \"/srv/data\" or \"~/.ssh\"");
  if (p.find('\0') != std::string::npos) fail(at, "contains a NUL byte");
  if (p.size() > kMaxPathLength) fail(at, "is longer than 4096 bytes");
  if (p.starts_with("~") && p != "~" && !p.starts_with("~/"))
    fail(at, policy::quote(p) + ": only \"~\" and \"~/...\" are expanded; write the other user's home as a full path");
  if (globs == GlobUse::kRefused && policy::hasGlob(p))
    fail(at, policy::quote(p) + " contains a glob character (*, ?, [); globs are only supported in filesystem.denyRead");
}

void limitValue(const json& obj, const char* key, PolicyField field, std::uint64_t& out, unsigned& given) {
  auto it = obj.find(key);
  if (it == obj.end()) return;
  given |= bit(field);
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<std::int64_t>() >= 0))
    fail(std::string("limits.") + key,
         (it->is_number() ? it->dump() + " is not a non-negative integer" : std::string("must be a number, not ") + typeName(*it)) +
             "; use 0 for no limit");
  out = it->get<std::uint64_t>();
}

// Starts at the bundled default's values (the members' initialisers); the
// keys present replace them.
struct Parts {
  FilesystemPolicy fs;
  NetworkPolicy net;
  EnvPolicy env;
  Limits limits;
  unsigned given = 0;
};

Parts partsFromJson(const json& root) {
  using F = PolicyField;
  Parts p;
  unsigned& g = p.given;
  checkKeys(root, "", {"filesystem", "network", "env", "limits"});
  if (auto fs = root.find("filesystem"); fs != root.end()) {
    checkKeys(*fs, "filesystem", {"denyRead", "allowRead", "allowWrite", "denyWrite"});
    stringList(*fs, "filesystem", "denyRead", F::kDenyRead, p.fs.denyRead, g);
    stringList(*fs, "filesystem", "allowRead", F::kAllowRead, p.fs.allowRead, g);
    stringList(*fs, "filesystem", "allowWrite", F::kAllowWrite, p.fs.allowWrite, g);
    stringList(*fs, "filesystem", "denyWrite", F::kDenyWrite, p.fs.denyWrite, g);
  }
  if (auto net = root.find("network"); net != root.end()) {
    checkKeys(*net, "network", {"allowedDomains", "deniedDomains", "allowUnixSockets", "allowLocalBinding"});
    stringList(*net, "network", "allowedDomains", F::kAllowedDomains, p.net.allowedDomains, g);
    stringList(*net, "network", "deniedDomains", F::kDeniedDomains, p.net.deniedDomains, g);
    stringList(*net, "network", "allowUnixSockets", F::kAllowUnixSockets, p.net.allowUnixSockets, g);
    if (auto b = net->find("allowLocalBinding"); b != net->end()) {
      g |= bit(F::kAllowLocalBinding);
      if (!b->is_boolean()) fail("network.allowLocalBinding", std::string("must be true or false, not ") + typeName(*b));
      p.net.allowLocalBinding = b->get<bool>();
    }
  }
  if (auto env = root.find("env"); env != root.end()) {
    checkKeys(*env, "env", {"allow"});
    stringList(*env, "env", "allow", F::kEnvAllow, p.env.allow, g);
  }
  if (auto lim = root.find("limits"); lim != root.end()) {
    checkKeys(*lim, "limits", {"memoryBytes", "pids", "cpuSeconds", "fileSizeBytes"});
    limitValue(*lim, "memoryBytes", F::kMemoryBytes, p.limits.memoryBytes, g);
    limitValue(*lim, "pids", F::kPids, p.limits.pids, g);
    limitValue(*lim, "cpuSeconds", F::kCpuSeconds, p.limits.cpuSeconds, g);
    limitValue(*lim, "fileSizeBytes", F::kFileSizeBytes, p.limits.fileSizeBytes, g);
  }
  return p;
}

// make() cannot see which members were left out: a value equal to the
// bundled default's counts as the default.
unsigned givenByValue(const Parts& p) {
  using F = PolicyField;
  const detail::BundledDefaults& d = detail::bundledDefaults();
  unsigned g = 0;
  auto mark = [&](bool differs, F field) { g |= differs ? bit(field) : 0u; };
  mark(p.fs.denyRead != d.denyRead, F::kDenyRead);
  mark(p.fs.allowRead != d.allowRead, F::kAllowRead);
  mark(p.fs.allowWrite != d.allowWrite, F::kAllowWrite);
  mark(p.fs.denyWrite != d.denyWrite, F::kDenyWrite);
  mark(p.net.allowedDomains != d.allowedDomains, F::kAllowedDomains);
  mark(p.net.deniedDomains != d.deniedDomains, F::kDeniedDomains);
  mark(p.net.allowUnixSockets != d.allowUnixSockets, F::kAllowUnixSockets);
  mark(p.net.allowLocalBinding != d.allowLocalBinding, F::kAllowLocalBinding);
  mark(p.env.allow != d.envAllow, F::kEnvAllow);
  mark(p.limits.memoryBytes != d.memoryBytes, F::kMemoryBytes);
  mark(p.limits.pids != d.pids, F::kPids);
  mark(p.limits.cpuSeconds != d.cpuSeconds, F::kCpuSeconds);
  mark(p.limits.fileSizeBytes != d.fileSizeBytes, F::kFileSizeBytes);
  return g;
}

void validate(const Parts& p) {
  auto paths = [](const std::vector<std::string>& list, const char* field, GlobUse globs) {
    for (std::size_t i = 0; i < list.size(); ++i)
      validatePath(std::string(field) + "[" + std::to_string(i) + "]", list[i], globs);
  };
  paths(p.fs.denyRead, "filesystem.denyRead", GlobUse::kAllowed);
  paths(p.fs.allowRead, "filesystem.allowRead", GlobUse::kRefused);
  paths(p.fs.allowWrite, "filesystem.allowWrite", GlobUse::kRefused);
  paths(p.fs.denyWrite, "filesystem.denyWrite", GlobUse::kRefused);
  paths(p.net.allowUnixSockets, "network.allowUnixSockets", GlobUse::kRefused);
  auto domains = [](const std::vector<std::string>& list, const char* field) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto parsed = policy::parseDomainPattern(list[i]);
      if (auto* why = std::get_if<std::string>(&parsed))
        fail(std::string(field) + "[" + std::to_string(i) + "]", policy::quote(list[i]) + " " + *why);
    }
  };
  domains(p.net.allowedDomains, "network.allowedDomains");
  domains(p.net.deniedDomains, "network.deniedDomains");
  for (std::size_t i = 0; i < p.env.allow.size(); ++i) {
    if (!policy::isEnvName(p.env.allow[i]))
      fail("env.allow[" + std::to_string(i) + "]",
           policy::quote(p.env.allow[i]) + " is not a variable name; names match [A-Za-z_][A-Za-z0-9_]*");
  }
}

// Rejects duplicate object keys: in a security policy, a second "denyRead"
// silently replacing the first is an attack, not a style issue.
json parseStrict(std::string_view text) {
  std::vector<std::set<std::string>> seen;
  std::vector<std::string> where;
  json::parser_callback_t cb = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: seen.emplace_back(); break;
      case json::parse_event_t::object_end: if (!seen.empty()) seen.pop_back(); break;
      case json::parse_event_t::key: {
        std::string key = parsed.get<std::string>();
        if (!seen.empty() && !seen.back().insert(key).second)
          fail(key, "appears twice in the same object; give each key once");
        break;
      }
      default: break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    fail("", "not valid JSON: " + what);
  }
}

}  // namespace

std::variant<SandboxPolicy, PolicyError> SandboxPolicy::parse(std::string_view text) noexcept {
  try {
    if (text.size() > kMaxPolicyBytes) return PolicyError{"", "policy is larger than 1 MiB"};
    if (nestingDepth(text) > kMaxDepth) return PolicyError{"", "policy nests deeper than 16 levels"};
    json root = parseStrict(text);
    Parts parts = partsFromJson(root);
    validate(parts);
    return assemble(std::move(parts.fs), std::move(parts.net), std::move(parts.env), parts.limits, parts.given);
  } catch (const Invalid& e) {
    return e.error;
  } catch (const std::exception& e) {
    return PolicyError{"", std::string("policy could not be read: ") + e.what()};
  }
}

SandboxPolicy SandboxPolicy::fromJson(std::string_view text) {
  auto parsed = parse(text);
  if (auto* err = std::get_if<PolicyError>(&parsed)) throw SandboxError(ErrorCode::kInvalidPolicy, err->text());
  return std::get<SandboxPolicy>(std::move(parsed));
}

SandboxPolicy SandboxPolicy::make(FilesystemPolicy fs, NetworkPolicy net, EnvPolicy env, Limits limits) {
  Parts parts{std::move(fs), std::move(net), std::move(env), limits};
  try {
    validate(parts);
  } catch (const Invalid& e) {
    throw SandboxError(ErrorCode::kInvalidPolicy, e.error.text());
  }
  unsigned given = givenByValue(parts);
  return assemble(std::move(parts.fs), std::move(parts.net), std::move(parts.env), parts.limits, given);
}

SandboxPolicy SandboxPolicy::assemble(FilesystemPolicy fs, NetworkPolicy net, EnvPolicy env, Limits limits,
                                      unsigned given) {
  SandboxPolicy out;
  out.fs_ = std::move(fs);
  out.net_ = std::move(net);
  out.env_ = std::move(env);
  out.limits_ = limits;
  out.given_ = given;
  return out;
}

std::string_view SandboxPolicy::defaultJson() noexcept { return policy_internal::kDefaultPolicyJson; }

// The members' initialisers are the bundled default's values (a unit test
// checks they are what parsing default.json gives).
SandboxPolicy SandboxPolicy::defaults() { return assemble({}, {}, {}, {}, 0); }

ValueSource SandboxPolicy::source(PolicyField field) const noexcept {
  return (given_ & bit(field)) ? ValueSource::kGiven : ValueSource::kDefault;
}

std::string_view policyFieldPath(PolicyField field) noexcept {
  switch (field) {
    case PolicyField::kDenyRead: return "filesystem.denyRead";
    case PolicyField::kAllowRead: return "filesystem.allowRead";
    case PolicyField::kAllowWrite: return "filesystem.allowWrite";
    case PolicyField::kDenyWrite: return "filesystem.denyWrite";
    case PolicyField::kAllowedDomains: return "network.allowedDomains";
    case PolicyField::kDeniedDomains: return "network.deniedDomains";
    case PolicyField::kAllowUnixSockets: return "network.allowUnixSockets";
    case PolicyField::kAllowLocalBinding: return "network.allowLocalBinding";
    case PolicyField::kEnvAllow: return "env.allow";
    case PolicyField::kMemoryBytes: return "limits.memoryBytes";
    case PolicyField::kPids: return "limits.pids";
    case PolicyField::kCpuSeconds: return "limits.cpuSeconds";
    case PolicyField::kFileSizeBytes: return "limits.fileSizeBytes";
  }
  return "";
}

std::string SandboxPolicy::toJson() const {
  json j = {
      {"filesystem",
       {{"denyRead", fs_.denyRead}, {"allowRead", fs_.allowRead}, {"allowWrite", fs_.allowWrite},
        {"denyWrite", fs_.denyWrite}}},
      {"network",
       {{"allowedDomains", net_.allowedDomains}, {"deniedDomains", net_.deniedDomains},
        {"allowUnixSockets", net_.allowUnixSockets}, {"allowLocalBinding", net_.allowLocalBinding}}},
      {"env", {{"allow", env_.allow}}},
      {"limits",
       {{"memoryBytes", limits_.memoryBytes}, {"pids", limits_.pids}, {"cpuSeconds", limits_.cpuSeconds},
        {"fileSizeBytes", limits_.fileSizeBytes}}},
  };
  return j.dump(2);
}

}  // namespace stockade
