#include "src/child_env.h"

#include <algorithm>

#include "platform/mutation.h"
#include "policy/text.h"
#include "proxy/environment.h"

namespace stockade {

std::string overlayNameProblem(std::string_view name, ProxyVariables proxy) {
  std::string quoted = "\"" + std::string(name) + "\"";
  if (!policy::isEnvName(name)) return quoted + " is not a variable name; names match [A-Za-z_][A-Za-z0-9_]*";
  if (name.starts_with("_t")) return quoted + " starts with \"_t\", which the sandbox keeps for itself";
  if (proxy == ProxyVariables::kSetByStockade && proxy::isProxyVariable(name))
    return quoted + " is a proxy variable; stockade sets it for a child with network (the policy allows domains) "
                    "and callers cannot override it";
  return {};
}

std::string overlayProxyProblem(const std::map<std::string, std::string>& overlay,
                                std::optional<std::uint16_t> proxyPort) {
  if (!proxyPort) return {};
  for (const auto& [name, value] : overlay)
    if (auto problem = overlayNameProblem(name, ProxyVariables::kSetByStockade); !problem.empty()) return problem;
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
    const bool filtered = !mutation::disabled(mutation::Layer::kEnvironmentFilter);  // scripts/mutate
    if (filtered && (proxy::isProxyVariable(name) || !std::binary_search(allow.begin(), allow.end(), name))) continue;
    env[name] = std::string(entry.substr(eq + 1));
  }
  env["TMPDIR"] = "/tmp";
  for (const auto& [name, value] : overlay) env[name] = value;
  if (proxyPort) {
    for (auto& [name, value] : proxy::proxyEnvironment("127.0.0.1", *proxyPort)) env[name] = std::move(value);
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace stockade
