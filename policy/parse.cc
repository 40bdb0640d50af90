// SandboxPolicy parsing and validation. Untrusted input: never throws out of
// parse(), never recurses on attacker-controlled depth, and reports every
// problem of a text (not only the first), each naming its JSON path, the
// value and the fix. Keys of sandbox-runtime's settings that are not stockade
// fields are handled by the table in policy/srt_settings.h.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

#include "policy/domain.h"
#include "policy/json_reader.h"
#include "policy/paths.h"
#include "policy/srt_settings.h"
#include "policy/text.h"
#include "stockade/error.h"
#include "stockade/policy.h"

namespace stockade {
namespace policy_internal {
extern const std::string_view kDefaultPolicyJson;
}  // namespace policy_internal

namespace {

using json = policy::Json;  // documents as read: keys in document order
using policy::elementPath;
using policy::memberPath;
using policy::Problems;
using F = PolicyField;

constexpr std::size_t kMaxPathLength = 4096;

// The bit of `field` in SandboxPolicy::given_.
constexpr unsigned bit(PolicyField field) { return 1u << static_cast<unsigned>(field); }

// Starts at the bundled default's values (the members' initialisers); the
// keys present replace them.
struct Parts {
  FilesystemPolicy fs;
  NetworkPolicy net;
  EnvPolicy env;
  Limits limits;
  unsigned given = 0;
  std::vector<PolicyNote> notes;
};

// What sandbox-runtime's credentials section adds, applied once the whole
// document is read (its keys may come in any order).
struct Credentials {
  std::vector<std::string> files;    // read-denied
  std::vector<std::string> envVars;  // withheld
};

// Reads a policy document into Parts: stockade's fields, sandbox-runtime's
// other keys, and the problems of both.
class Reader {
 public:
  Reader(const policy::JsonDocument& doc, Problems& problems, Parts& parts)
      : doc_(doc), problems_(problems), p_(parts) {}

  void read() {
    const json& root = doc_.root;
    if (!root.is_object()) return problem("", std::string("must be an object, not ") + policy::jsonTypeName(root));
    for (const auto& [key, value] : root.items()) {
      if (key == "filesystem") filesystem(value);
      else if (key == "network") network(value);
      else if (key == "env") env(value);
      else if (key == "limits") limits(value);
      else if (key == "credentials") credentials(value);
      else if (key == "mandatoryDenySearchDepth") searchDepth(value);
      else other(key, value, "filesystem, network, env, limits");
    }
    if (!credentials_.files.empty()) {
      p_.fs.denyRead.insert(p_.fs.denyRead.end(), credentials_.files.begin(), credentials_.files.end());
      p_.given |= bit(F::kDenyRead);
    }
    auto& allow = p_.env.allow;
    for (const auto& name : credentials_.envVars) allow.erase(std::remove(allow.begin(), allow.end(), name), allow.end());
  }

 private:
  void problem(std::string path, std::string message) { problems_.add(std::move(path), std::move(message)); }

  bool isObject(const json& v, const std::string& path) {
    if (v.is_object()) return true;
    problem(path, std::string("must be an object, not ") + policy::jsonTypeName(v));
    return false;
  }

  // A key that is not a stockade field: a sandbox-runtime key (accepted,
  // noted or refused by the table) or an error.
  void other(const std::string& path, const json& value, std::string_view fields) {
    const policy::SrtKey* key = policy::findSrtKey(path);
    if (!key) {
      std::string_view leaf = std::string_view(path).substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
      return problem(path, "unknown key " + policy::quote(leaf) + "; expected one of: " + std::string(fields) +
                               " (sandbox-runtime keys: see docs/srt-compat.md)");
    }
    policy::SrtHandling how = key->other;
    if (key->boolean) {
      if (!value.is_boolean())
        return problem(path, std::string("must be true or false, not ") + policy::jsonTypeName(value));
      how = policy::srtHandling(*key, value.get<bool>());
    }
    handle(path, how, key->why, value);
  }

  void handle(const std::string& path, policy::SrtHandling how, std::string_view why, const json& value) {
    switch (how) {
      case policy::SrtHandling::kSame: return;
      case policy::SrtHandling::kStronger:
        p_.notes.push_back({PolicyNote::Kind::kStronger, path, std::string(why)});
        return;
      case policy::SrtHandling::kNotApplicable:
        p_.notes.push_back({PolicyNote::Kind::kNotApplicable, path, std::string(why)});
        return;
      case policy::SrtHandling::kRefused:
        return problem(path, value.dump(-1, ' ', false, json::error_handler_t::replace) +
                                 " is refused: it would weaken enforcement, and " + std::string(why) +
                                 "; remove the key" + (value.is_boolean() ? " or set it to false" : ""));
    }
  }

  // A list of strings at `section.key`: present, it replaces `out` (the default).
  template <typename Element>
  void list(const json& obj, const std::string& section, const char* key, F field, std::vector<std::string>& out,
            Element element) {
    auto it = obj.find(key);
    if (it == obj.end()) return;
    p_.given |= bit(field);
    std::string path = memberPath(section, key);
    if (!it->is_array()) return problem(path, std::string("must be an array, not ") + policy::jsonTypeName(*it));
    out.clear();
    for (std::size_t i = 0; i < it->size(); ++i) {
      if (auto v = element((*it)[i], elementPath(path, i))) out.push_back(std::move(*v));
    }
  }

  std::optional<std::string> stringElement(const json& v, const std::string& at) {
    if (v.is_string()) return v.get<std::string>();
    problem(at, std::string("must be a string, not ") + policy::jsonTypeName(v));
    return std::nullopt;
  }

  // A filesystem entry: a path (which may be a glob), or sandbox-runtime's
  // {"path": P, "literal": true}, a name that is never a pattern.
  std::optional<std::string> pathElement(const json& v, const std::string& at) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object()) {
      auto path = v.find("path");
      auto literal = v.find("literal");
      if (v.size() == 2 && path != v.end() && path->is_string() && literal != v.end() && *literal == true)
        return policy::escapeGlob(path->get<std::string>());
      problem(at, v.dump(-1, ' ', false, json::error_handler_t::replace) +
                      " is not a path entry; write a path, or {\"path\": \"<path>\", \"literal\": true}");
      return std::nullopt;
    }
    problem(at, std::string("must be a path or {\"path\": ..., \"literal\": true}, not ") + policy::jsonTypeName(v));
    return std::nullopt;
  }

  void flag(const json& obj, const std::string& section, const char* key, F field, bool& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return;
    p_.given |= bit(field);
    if (!it->is_boolean())
      return problem(memberPath(section, key), std::string("must be true or false, not ") + policy::jsonTypeName(*it));
    out = it->get<bool>();
  }

  // Keys of `obj` that are not in `fields` go to other().
  void rest(const json& obj, const std::string& section, std::initializer_list<std::string_view> fields) {
    std::string expected;
    for (auto f : fields) expected += (expected.empty() ? "" : ", ") + std::string(f);
    for (const auto& [key, value] : obj.items()) {
      if (std::find(fields.begin(), fields.end(), key) == fields.end()) other(memberPath(section, key), value, expected);
    }
  }

  void filesystem(const json& fs) {
    if (!isObject(fs, "filesystem")) return;
    auto path = [this](const json& v, const std::string& at) { return pathElement(v, at); };
    list(fs, "filesystem", "denyRead", F::kDenyRead, p_.fs.denyRead, path);
    list(fs, "filesystem", "allowRead", F::kAllowRead, p_.fs.allowRead, path);
    list(fs, "filesystem", "allowWrite", F::kAllowWrite, p_.fs.allowWrite, path);
    list(fs, "filesystem", "denyWrite", F::kDenyWrite, p_.fs.denyWrite, path);
    flag(fs, "filesystem", "allowWriteSystemPaths", F::kAllowWriteSystemPaths, p_.fs.allowWriteSystemPaths);
    rest(fs, "filesystem", {"denyRead", "allowRead", "allowWrite", "denyWrite", "allowWriteSystemPaths"});
  }

  void network(const json& net) {
    if (!isObject(net, "network")) return;
    auto str = [this](const json& v, const std::string& at) { return stringElement(v, at); };
    list(net, "network", "allowedDomains", F::kAllowedDomains, p_.net.allowedDomains, str);
    list(net, "network", "deniedDomains", F::kDeniedDomains, p_.net.deniedDomains, str);
    list(net, "network", "allowUnixSockets", F::kAllowUnixSockets, p_.net.allowUnixSockets,
         [this](const json& v, const std::string& at) { return pathElement(v, at); });
    flag(net, "network", "allowAllUnixSockets", F::kAllowAllUnixSockets, p_.net.allowAllUnixSockets);
    flag(net, "network", "allowLocalBinding", F::kAllowLocalBinding, p_.net.allowLocalBinding);
    if (auto it = net.find("deniedResolvedAddresses"); it != net.end()) deniedResolvedAddresses(*it);
    rest(net, "network",
         {"allowedDomains", "deniedDomains", "allowUnixSockets", "allowAllUnixSockets", "allowLocalBinding",
          "deniedResolvedAddresses"});
  }

  // sandbox-runtime's addresses an allowed name must not resolve to. A single
  // address is a deniedDomains entry (which refuses every connection that
  // would reach it); a range is honoured when the proxy already refuses every
  // address in it, and refused otherwise.
  void deniedResolvedAddresses(const json& v) {
    const std::string path = "network.deniedResolvedAddresses";
    if (!v.is_array()) return problem(path, std::string("must be an array, not ") + policy::jsonTypeName(v));
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string at = elementPath(path, i);
      if (!v[i].is_string()) {
        problem(at, std::string("must be a string, not ") + policy::jsonTypeName(v[i]));
        continue;
      }
      const std::string text = v[i].get<std::string>();
      if (auto ip = policy::canonicalIp(text)) {
        p_.net.deniedDomains.push_back(ip->find(':') != std::string::npos ? "[" + *ip + "]" : *ip);
        p_.given |= bit(F::kDeniedDomains);
        continue;
      }
      switch (policy::classifyAddressRange(text)) {
        case policy::AddressRange::kNotARange:
          problem(at, policy::quote(text) + " is not an IP address or CIDR range such as \"10.0.0.0/8\"");
          break;
        case policy::AddressRange::kAlwaysRefused:
          p_.notes.push_back({PolicyNote::Kind::kStronger, at,
                              "the proxy refuses every address in it for every allowed name already"});
          break;
        case policy::AddressRange::kOther:
          problem(at, policy::quote(text) +
                          " is refused: stockade refuses loopback, private, link-local, multicast, reserved and "
                          "metadata addresses for allowed names, but cannot deny other ranges; list the addresses "
                          "one by one in network.deniedDomains");
          break;
      }
    }
  }

  void env(const json& e) {
    if (!isObject(e, "env")) return;
    list(e, "env", "allow", F::kEnvAllow, p_.env.allow,
         [this](const json& v, const std::string& at) { return stringElement(v, at); });
    for (const auto& [key, value] : e.items()) {
      if (key != "allow") problem(memberPath("env", key), "unknown key " + policy::quote(key) + "; expected: allow");
    }
  }

  void limits(const json& lim) {
    if (!isObject(lim, "limits")) return;
    struct Field {
      const char* key;
      F field;
      std::uint64_t Limits::*member;
    };
    static constexpr Field kFields[] = {{"memoryBytes", F::kMemoryBytes, &Limits::memoryBytes},
                                        {"pids", F::kPids, &Limits::pids},
                                        {"cpuSeconds", F::kCpuSeconds, &Limits::cpuSeconds},
                                        {"fileSizeBytes", F::kFileSizeBytes, &Limits::fileSizeBytes}};
    for (auto it = lim.begin(); it != lim.end(); ++it) {
      const std::string& key = it.key();
      const json& value = it.value();
      auto f = std::find_if(std::begin(kFields), std::end(kFields), [&](const Field& x) { return key == x.key; });
      std::string path = memberPath("limits", key);
      if (f == std::end(kFields)) {
        problem(path, "unknown key " + policy::quote(key) + "; expected one of: memoryBytes, pids, cpuSeconds, fileSizeBytes");
        continue;
      }
      p_.given |= bit(f->field);
      if (auto n = wholeNumber(value, path, "use 0 for no limit")) p_.limits.*(f->member) = *n;
    }
  }

  // A non-negative integer of 64 bits, quoted as written when it is not one.
  std::optional<std::uint64_t> wholeNumber(const json& v, const std::string& path, std::string_view fix) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer()) {
      problem(path, v.dump() + " is negative; give a whole number from 0 to 18446744073709551615 (" + std::string(fix) + ")");
      return std::nullopt;
    }
    if (v.is_number_float()) {
      auto text = doc_.numberText.find(path);
      std::string written = text == doc_.numberText.end() ? v.dump() : text->second;
      bool digits = !written.empty() && std::all_of(written.begin() + (written.front() == '-'), written.end(),
                                                    [](char c) { return c >= '0' && c <= '9'; });
      if (digits && written.front() != '-')
        problem(path, written + " is larger than 18446744073709551615, the largest value; " + std::string(fix));
      else if (digits)
        problem(path, written + " is negative; give a whole number from 0 to 18446744073709551615 (" + std::string(fix) + ")");
      else
        problem(path, written + " is not a whole number; write it in digits, such as 1073741824 (" + std::string(fix) + ")");
      return std::nullopt;
    }
    problem(path, std::string("must be a whole number, not ") + policy::jsonTypeName(v) + "; " + std::string(fix));
    return std::nullopt;
  }

  void searchDepth(const json& v) {
    const std::string path = "mandatoryDenySearchDepth";
    auto n = wholeNumber(v, path, "sandbox-runtime takes 1 to 10");
    if (!n) return;
    if (*n < 1 || *n > 10) return problem(path, std::to_string(*n) + " is outside 1 to 10, the range sandbox-runtime takes");
    p_.notes.push_back({PolicyNote::Kind::kStronger, path, "mandatory-deny names are protected at every depth"});
  }

  // sandbox-runtime's credentials: each declared file is read-denied and each
  // declared variable withheld. "mask" (a stand-in value swapped back by a
  // TLS-terminating proxy) is enforced as "deny", which is stronger.
  void credentials(const json& c) {
    if (!isObject(c, "credentials")) return;
    for (const auto& [key, value] : c.items()) {
      std::string path = memberPath("credentials", key);
      if (key == "files") credentialEntries(value, path, "path");
      else if (key == "envVars") credentialEntries(value, path, "name");
      else other(path, value, "files, envVars");
    }
  }

  void credentialEntries(const json& list, const std::string& path, const char* nameKey) {
    if (!list.is_array()) return problem(path, std::string("must be an array, not ") + policy::jsonTypeName(list));
    for (std::size_t i = 0; i < list.size(); ++i) {
      const json& e = list[i];
      std::string at = elementPath(path, i);
      if (!isObject(e, at)) continue;
      auto name = e.find(nameKey);
      auto mode = e.find("mode");
      if (name == e.end() || !name->is_string()) {
        problem(memberPath(at, nameKey), "must be a string");
        continue;
      }
      if (mode == e.end() || !mode->is_string() || (*mode != "deny" && *mode != "mask")) {
        problem(memberPath(at, "mode"), "must be \"deny\" or \"mask\"");
        continue;
      }
      if (*mode == "mask")
        p_.notes.push_back({PolicyNote::Kind::kStronger, memberPath(at, "mode"),
                            "\"mask\" is enforced as \"deny\": stockade has no stand-in values"});
      const std::string value = name->get<std::string>();
      if (std::string_view(nameKey) == "path") {
        if (validatePath(memberPath(at, "path"), value, Globs::kPattern, problems_)) credentials_.files.push_back(value);
      } else if (!policy::isEnvName(value)) {
        problem(memberPath(at, "name"), policy::quote(value) + " is not a variable name; names match [A-Za-z_][A-Za-z0-9_]*");
      } else {
        credentials_.envVars.push_back(value);
      }
    }
  }

 public:
  enum class Globs { kPattern, kNone };
  // Checks one path entry (as it is stored: literal names escaped); false
  // when it added a problem.
  static bool validatePath(const std::string& at, const std::string& p, Globs globs, Problems& problems) {
    auto bad = [&](std::string message) {
      problems.add(at, std::move(message));
      return false;
    };
    if (p.empty()) return bad("is empty; give a path such as \"/srv/data\" or \"~/.ssh\"");
    if (p.find('\0') != std::string::npos) return bad("contains a NUL byte");
    if (p.size() > kMaxPathLength) return bad("is longer than 4096 bytes");
    if (p.starts_with("~") && p != "~" && !p.starts_with("~/"))
      return bad(policy::quote(p) + ": only \"~\" and \"~/...\" are expanded; write the other user's home as a full path");
    if (globs == Globs::kNone && policy::hasGlob(p))
      return bad(policy::quote(p) +
                 " contains a glob character (*, ?, [); this list takes paths only: to name a path with such "
                 "characters write {\"path\": " + policy::quote(p) + ", \"literal\": true}");
    return true;
  }

 private:
  const policy::JsonDocument& doc_;
  Problems& problems_;
  Parts& p_;
  Credentials credentials_;
};

// allowWrite and denyWrite take directories, not patterns: a trailing "/**"
// (sandbox-runtime's spelling of a whole tree) names the directory itself.
void dropTrailingStarStar(std::vector<std::string>& list) {
  for (auto& p : list) {
    while (p.size() > 3 && p.ends_with("/**")) p.resize(p.size() - 3);
  }
}

void validate(Parts& p, Problems& problems) {
  using Globs = Reader::Globs;
  dropTrailingStarStar(p.fs.allowWrite);
  dropTrailingStarStar(p.fs.denyWrite);
  auto paths = [&](const std::vector<std::string>& list, const char* field, Globs globs) {
    for (std::size_t i = 0; i < list.size(); ++i) Reader::validatePath(elementPath(field, i), list[i], globs, problems);
  };
  paths(p.fs.denyRead, "filesystem.denyRead", Globs::kPattern);
  paths(p.fs.allowRead, "filesystem.allowRead", Globs::kPattern);
  paths(p.fs.allowWrite, "filesystem.allowWrite", Globs::kNone);
  paths(p.fs.denyWrite, "filesystem.denyWrite", Globs::kPattern);
  paths(p.net.allowUnixSockets, "network.allowUnixSockets", Globs::kNone);
  auto domains = [&](const std::vector<std::string>& list, const char* field, policy::DomainUse use) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto parsed = policy::parseDomainPattern(list[i], use);
      if (auto* why = std::get_if<std::string>(&parsed)) problems.add(elementPath(field, i), policy::quote(list[i]) + " " + *why);
    }
  };
  domains(p.net.allowedDomains, "network.allowedDomains", policy::DomainUse::kAllow);
  domains(p.net.deniedDomains, "network.deniedDomains", policy::DomainUse::kDeny);
  for (std::size_t i = 0; i < p.env.allow.size(); ++i) {
    if (!policy::isEnvName(p.env.allow[i]))
      problems.add(elementPath("env.allow", i),
                   policy::quote(p.env.allow[i]) + " is not a variable name; names match [A-Za-z_][A-Za-z0-9_]*");
  }
}

// make() cannot see which members were left out: a value equal to the
// bundled default's counts as the default.
unsigned givenByValue(const Parts& p) {
  const detail::BundledDefaults& d = detail::bundledDefaults();
  unsigned g = 0;
  auto mark = [&](bool differs, F field) { g |= differs ? bit(field) : 0u; };
  mark(p.fs.denyRead != d.denyRead, F::kDenyRead);
  mark(p.fs.allowRead != d.allowRead, F::kAllowRead);
  mark(p.fs.allowWrite != d.allowWrite, F::kAllowWrite);
  mark(p.fs.denyWrite != d.denyWrite, F::kDenyWrite);
  mark(p.fs.allowWriteSystemPaths != d.allowWriteSystemPaths, F::kAllowWriteSystemPaths);
  mark(p.net.allowedDomains != d.allowedDomains, F::kAllowedDomains);
  mark(p.net.deniedDomains != d.deniedDomains, F::kDeniedDomains);
  mark(p.net.allowUnixSockets != d.allowUnixSockets, F::kAllowUnixSockets);
  mark(p.net.allowAllUnixSockets != d.allowAllUnixSockets, F::kAllowAllUnixSockets);
  mark(p.net.allowLocalBinding != d.allowLocalBinding, F::kAllowLocalBinding);
  mark(p.env.allow != d.envAllow, F::kEnvAllow);
  mark(p.limits.memoryBytes != d.memoryBytes, F::kMemoryBytes);
  mark(p.limits.pids != d.pids, F::kPids);
  mark(p.limits.cpuSeconds != d.cpuSeconds, F::kCpuSeconds);
  mark(p.limits.fileSizeBytes != d.fileSizeBytes, F::kFileSizeBytes);
  return g;
}

// A list as JSON: a filesystem entry that spells a literal name with glob
// characters (stored escaped) is written as sandbox-runtime's literal form.
nlohmann::json pathListJson(const std::vector<std::string>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : list) {
    std::string name = policy::unescapeGlob(p);
    if (name != p && policy::escapeGlob(name) == p) out.push_back({{"path", name}, {"literal", true}});
    else out.push_back(p);
  }
  return out;
}

}  // namespace

std::variant<SandboxPolicy, PolicyError> SandboxPolicy::parse(std::string_view text) noexcept {
  try {
    Problems problems;
    auto doc = policy::readJson(text, problems);
    if (!doc) return problems.error();
    Parts parts;
    Reader(*doc, problems, parts).read();
    validate(parts, problems);
    if (!problems.empty()) return problems.error();
    return assemble(std::move(parts.fs), std::move(parts.net), std::move(parts.env), parts.limits, parts.given,
                    std::move(parts.notes));
  } catch (const std::exception& e) {  // allocation failure
    return PolicyError{"", std::string("policy could not be read: ") + e.what(), {}};
  }
}

SandboxPolicy SandboxPolicy::fromJson(std::string_view text) {
  auto parsed = parse(text);
  if (auto* err = std::get_if<PolicyError>(&parsed)) throw SandboxError(ErrorCode::kInvalidPolicy, err->text());
  return std::get<SandboxPolicy>(std::move(parsed));
}

SandboxPolicy SandboxPolicy::make(FilesystemPolicy fs, NetworkPolicy net, EnvPolicy env, Limits limits) {
  Parts parts{std::move(fs), std::move(net), std::move(env), limits};
  Problems problems;
  validate(parts, problems);
  if (!problems.empty()) throw SandboxError(ErrorCode::kInvalidPolicy, problems.error().text());
  unsigned given = givenByValue(parts);
  return assemble(std::move(parts.fs), std::move(parts.net), std::move(parts.env), parts.limits, given, {});
}

SandboxPolicy SandboxPolicy::assemble(FilesystemPolicy fs, NetworkPolicy net, EnvPolicy env, Limits limits,
                                      unsigned given, std::vector<PolicyNote> notes) {
  SandboxPolicy out;
  out.fs_ = std::move(fs);
  out.net_ = std::move(net);
  out.env_ = std::move(env);
  out.limits_ = limits;
  out.given_ = given;
  out.notes_ = std::move(notes);
  return out;
}

std::string_view SandboxPolicy::defaultJson() noexcept { return policy_internal::kDefaultPolicyJson; }

// The members' initialisers are the bundled default's values (a unit test
// checks they are what parsing default.json gives).
SandboxPolicy SandboxPolicy::defaults() { return assemble({}, {}, {}, {}, 0, {}); }

ValueSource SandboxPolicy::source(PolicyField field) const noexcept {
  return (given_ & bit(field)) ? ValueSource::kGiven : ValueSource::kDefault;
}

std::string_view policyFieldPath(PolicyField field) noexcept {
  switch (field) {
    case F::kDenyRead: return "filesystem.denyRead";
    case F::kAllowRead: return "filesystem.allowRead";
    case F::kAllowWrite: return "filesystem.allowWrite";
    case F::kDenyWrite: return "filesystem.denyWrite";
    case F::kAllowWriteSystemPaths: return "filesystem.allowWriteSystemPaths";
    case F::kAllowedDomains: return "network.allowedDomains";
    case F::kDeniedDomains: return "network.deniedDomains";
    case F::kAllowUnixSockets: return "network.allowUnixSockets";
    case F::kAllowAllUnixSockets: return "network.allowAllUnixSockets";
    case F::kAllowLocalBinding: return "network.allowLocalBinding";
    case F::kEnvAllow: return "env.allow";
    case F::kMemoryBytes: return "limits.memoryBytes";
    case F::kPids: return "limits.pids";
    case F::kCpuSeconds: return "limits.cpuSeconds";
    case F::kFileSizeBytes: return "limits.fileSizeBytes";
  }
  return "";
}

std::string SandboxPolicy::toJson() const {
  nlohmann::json j = {
      {"filesystem",
       {{"denyRead", pathListJson(fs_.denyRead)}, {"allowRead", pathListJson(fs_.allowRead)},
        {"allowWrite", pathListJson(fs_.allowWrite)}, {"denyWrite", pathListJson(fs_.denyWrite)},
        {"allowWriteSystemPaths", fs_.allowWriteSystemPaths}}},
      {"network",
       {{"allowedDomains", net_.allowedDomains}, {"deniedDomains", net_.deniedDomains},
        {"allowUnixSockets", pathListJson(net_.allowUnixSockets)}, {"allowAllUnixSockets", net_.allowAllUnixSockets},
        {"allowLocalBinding", net_.allowLocalBinding}}},
      {"env", {{"allow", env_.allow}}},
      {"limits",
       {{"memoryBytes", limits_.memoryBytes}, {"pids", limits_.pids}, {"cpuSeconds", limits_.cpuSeconds},
        {"fileSizeBytes", limits_.fileSizeBytes}}},
  };
  return j.dump(2);
}

}  // namespace stockade
