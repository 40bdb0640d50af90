#include "proxy/environment.h"

#include <stdexcept>

#include "proxy/http_message.h"

namespace stockade::proxy {

namespace {
constexpr std::string_view kNames[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"};
}

std::vector<std::pair<std::string, std::string>> proxyEnvironment(const std::string& host, std::uint16_t port) {
  if (host.empty() || port == 0) throw std::invalid_argument("proxyEnvironment: a host and a non-zero port are required");
  std::string authority = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  std::string http = "http://" + authority;
  std::string socks = "socks5h://" + authority;
  std::vector<std::pair<std::string, std::string>> env;
  for (bool upper : {true, false}) {
    auto name = [upper](std::string_view n) {
      std::string s(n);
      if (!upper)
        for (char& c : s)
          if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      return s;
    };
    env.emplace_back(name("HTTP_PROXY"), http);
    env.emplace_back(name("HTTPS_PROXY"), http);
    env.emplace_back(name("ALL_PROXY"), socks);
    env.emplace_back(name("NO_PROXY"), "");
  }
  return env;
}

bool isProxyVariable(std::string_view name) noexcept {
  for (auto n : kNames) {
    if (http::iequals(name, n)) return true;
  }
  return false;
}

}  // namespace stockade::proxy
