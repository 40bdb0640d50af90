// The proxy variables stockade sets in every child. They are applied after
// the caller's environment, so a caller cannot override them. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stockade::proxy {

// HTTP_PROXY, HTTPS_PROXY (http://HOST:PORT), ALL_PROXY (socks5h://HOST:PORT:
// names are resolved by the proxy, never by the child, which has no DNS),
// their lower-case forms, and NO_PROXY / no_proxy set empty so that nothing
// bypasses the proxy. `host` is the listener's address as the child sees it:
// "127.0.0.1" or "::1" (written "[::1]" in the URLs).
std::vector<std::pair<std::string, std::string>> proxyEnvironment(const std::string& host, std::uint16_t port);

// True for the names proxyEnvironment() sets, in any letter case: an env
// overlay naming one of them must not win over stockade's value.
bool isProxyVariable(std::string_view name) noexcept;

}  // namespace stockade::proxy
