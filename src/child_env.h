// The child's environment: nothing from the host except the policy's
// env.allow names, TMPDIR pointing at the private /tmp, the caller's overlay,
// and last the proxy variables, which nobody can override.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stockade/rules.h"

namespace stockade {

// Whether stockade sets the proxy variables for the child (it has network).
enum class ProxyVariables { kNotSet, kSetByStockade };

// Empty when `name` may be set by a caller's overlay; otherwise why not.
// Rules: [A-Za-z_][A-Za-z0-9_]*, not starting with "_t" (kept for the
// sandbox's own use), and not a proxy variable when stockade sets those:
// the overlay may set what stockade does not.
std::string overlayNameProblem(std::string_view name, ProxyVariables proxy);

// Empty when `overlay` may be applied to a child with (proxyPort) or without
// network; otherwise why not: the first name that is a proxy variable
// stockade sets.
std::string overlayProxyProblem(const std::map<std::string, std::string>& overlay,
                                std::optional<std::uint16_t> proxyPort);

// `hostEnv` is a NULL-terminated "K=V" array (environ). Overlay names must
// have passed overlayNameProblem() for this proxyPort. proxyPort: the port of the proxy listener
// inside the child's network namespace, when the child has network.
std::vector<std::string> childEnvironment(const DerivedRules& rules, char* const* hostEnv,
                                          const std::map<std::string, std::string>& overlay,
                                          std::optional<std::uint16_t> proxyPort);

// The proxy's port inside every sandbox's own network namespace.
inline constexpr std::uint16_t kSandboxProxyPort = 3128;

}  // namespace stockade
