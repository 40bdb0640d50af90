// libmd's SHA256Init/Update/Final: see fingerprint() and the top-level CMakeLists.txt.
#include <sys/types.h>
#include <sha2.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <nlohmann/json.hpp>

#include "policy/paths.h"
#include "policy/protected_names.h"
#include "policy/rules_builder.h"

namespace stockade {
namespace {

using nlohmann::json;

template <typename T>
void canonicalise(std::vector<T>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

template <typename Rule>
json textList(const std::vector<Rule>& rules) {
  json out = json::array();
  for (const auto& r : rules) out.push_back(r.text());
  return out;
}

using policy::deepestContaining;  // the lists are sorted (build() below)

bool anyContaining(const std::vector<std::string>& list, std::string_view path) {
  return deepestContaining(list, path) != nullptr;
}

}  // namespace

DerivedRules RulesBuilder::build() && {
  for (auto* list : {&fs.denyRead, &fs.denyReadPatterns, &fs.allowRead, &fs.allowReadPatterns, &fs.allowWrite,
                     &fs.defaultWrite, &fs.denyWrite, &fs.denyWritePatterns, &fs.mandatoryDenyWrite,
                     &net.allowUnixSockets, &env})
    canonicalise(*list);
  canonicalise(fs.protectedNames);
  canonicalise(net.allowedDomains);
  canonicalise(net.deniedDomains);
  DerivedRules out;
  out.fs_ = std::move(fs);
  out.net_ = std::move(net);
  out.env_ = std::move(env);
  out.limits_ = limits;
  return out;
}

std::string DerivedRules::toJson() const {
  json j = {
      {"filesystem",
       {{"denyRead", fs_.denyRead},
        {"denyReadPatterns", fs_.denyReadPatterns},
        {"allowRead", fs_.allowRead},
        {"allowReadPatterns", fs_.allowReadPatterns},
        {"allowWrite", fs_.allowWrite},
        {"defaultWrite", fs_.defaultWrite},
        {"denyWrite", fs_.denyWrite},
        {"denyWritePatterns", fs_.denyWritePatterns},
        {"mandatoryDenyWrite", fs_.mandatoryDenyWrite},
        {"allowWriteSystemPaths", fs_.allowWriteSystemPaths},
        {"protectedNames", textList(fs_.protectedNames)}}},
      {"network",
       {{"allowedDomains", textList(net_.allowedDomains)},
        {"deniedDomains", textList(net_.deniedDomains)},
        {"allowUnixSockets", net_.allowUnixSockets},
        {"allowAllUnixSockets", net_.allowAllUnixSockets},
        {"allowLocalBinding", net_.allowLocalBinding}}},
      {"env", {{"allow", env_}}},
      {"limits",
       {{"memoryBytes", limits_.memoryBytes},
        {"pids", limits_.pids},
        {"cpuSeconds", limits_.cpuSeconds},
        {"fileSizeBytes", limits_.fileSizeBytes}}},
  };
  return j.dump();  // nlohmann objects keep keys sorted: the text is canonical
}

std::string DerivedRules::fingerprint() const {
  const std::string text = toJson();
  // libmd, not OpenSSL: no constructor runs at the CLI's start (CMakeLists.txt).
  unsigned char digest[SHA256_DIGEST_LENGTH];
  const unsigned len = SHA256_DIGEST_LENGTH;
  SHA2_CTX ctx;
  SHA256Init(&ctx);
  SHA256Update(&ctx, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  SHA256Final(digest, &ctx);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

bool DerivedRules::readable(std::string_view path) const {
  const std::string* deny = deepestContaining(fs_.denyRead, path);
  if (!deny) return true;
  const std::string* allow = deepestContaining(fs_.allowRead, path);
  return allow && allow->size() > deny->size();
}

std::string ProtectedName::text() const { return nonDirectoryOnly ? pattern + " (not a directory)" : pattern; }

bool DerivedRules::writable(std::string_view path) const {
  if (anyContaining(fs_.denyWrite, path) || anyContaining(fs_.mandatoryDenyWrite, path)) return false;
  // The default write paths are the sandbox's own objects (/dev/null, the
  // private TMPDIR); a host path must also be visible to be written.
  if (!anyContaining(fs_.defaultWrite, path) && !(anyContaining(fs_.allowWrite, path) && readable(path))) return false;
  // narrowing() asks this of every entry of two rule sets, which nearly
  // always carry the same names: the last matcher is kept, per thread.
  thread_local std::vector<ProtectedName> lastNames;
  thread_local std::optional<policy::ProtectedNameMatcher> last;
  if (!last || lastNames != fs_.protectedNames) {
    lastNames = fs_.protectedNames;
    last.emplace(fs_.protectedNames);
  }
  return last->protecting(path, /*isDirectory=*/false) == nullptr;
}

}  // namespace stockade
