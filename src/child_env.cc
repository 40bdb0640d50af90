#include "src/child_env.h"

#include <algorithm>
#include <array>

namespace stockade {
namespace {

constexpr std::array<std::string_view, 10> kProxyVariables = {
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY",
    "http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy"};

bool validName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

}  // namespace

bool isProxyVariable(std::string_view name) noexcept {
  return std::find(kProxyVariables.begin(), kProxyVariables.end(), name) != kProxyVariables.end();
}

std::string overlayNameProblem(std::string_view name) {
  std::string quoted = "\"" + std::string(name) + "\"";
  if (!validName(name)) return quoted + " is not a variable name; names match [A-Za-z_][A-Za-z0-9_]*";
  if (name.starts_with("_t")) return quoted + " starts with \"_t\", which the sandbox keeps for itself";
  if (isProxyVariable(name)) return quoted + " is a proxy variable; stockade sets it and callers cannot override it";
  return {};
}

std::vector<std::string> childEnvironment(const DerivedRules& rules, char* const* hostEnv,
                                          const std::map<std::string, std::string>& overlay,
                                          std::optional<std::uint16_t> proxyPort) {
  std::map<std::string, std::string> env;
  const auto& allow = rules.envAllow();  // sorted
  for (char* const* e = hostEnv; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(entry.substr(0, eq));
    if (isProxyVariable(name) || !std::binary_search(allow.begin(), allow.end(), name)) continue;
    env[name] = std::string(entry.substr(eq + 1));
  }
  env["TMPDIR"] = "/tmp";
  for (const auto& [name, value] : overlay) env[name] = value;
  if (proxyPort) {
    const std::string port = std::to_string(*proxyPort);
    const std::string http = "http://127.0.0.1:" + port;
    const std::string socks = "socks5h://127.0.0.1:" + port;
    for (const char* n : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) env[n] = http;
    for (const char* n : {"ALL_PROXY", "all_proxy"}) env[n] = socks;
    for (const char* n : {"NO_PROXY", "no_proxy"}) env[n] = "";
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace stockade
