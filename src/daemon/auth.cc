#include "src/daemon/auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "platform/unique_fd.h"

namespace stockade::daemon {

bool constantTimeEqual(std::string_view a, std::string_view b) noexcept {
  // Every byte of the longer input is read; the lengths take part in the
  // result without an early return.
  std::size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  // Keep the compiler from turning the loop into an early-exit compare.
  volatile unsigned char result = diff;
  return result == 0;
}

std::optional<ApiError> checkOrigin(const AuthPolicy& policy, std::optional<std::string_view> origin) {
  if (!origin) return std::nullopt;
  for (const auto& allowed : policy.allowedOrigins)
    if (*origin == allowed) return std::nullopt;
  return ApiError{ApiCode::kPermissionDenied,
                  "requests with an Origin header (" + quoteValue(*origin) +
                      ") are refused: a web page must not reach this daemon; start stockaded with "
                      "--allow-origin ORIGIN to allow one"};
}

std::optional<ApiError> checkToken(const AuthPolicy& policy, std::optional<std::string_view> authorization) {
  if (!policy.token) return std::nullopt;
  if (!authorization)
    return ApiError{ApiCode::kUnauthorized, "missing Authorization header; send \"Authorization: Bearer <token>\""};
  std::string_view v = *authorization;
  constexpr std::string_view kScheme = "Bearer ";
  // The scheme is case-insensitive (RFC 9110 11.1).
  bool bearer = v.size() >= kScheme.size() &&
                std::equal(kScheme.begin(), kScheme.end(), v.begin(), [](char a, char b) {
                  return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
                });
  if (!bearer) return ApiError{ApiCode::kUnauthorized, "the Authorization header is not \"Bearer <token>\""};
  v.remove_prefix(kScheme.size());
  if (!constantTimeEqual(v, *policy.token)) return ApiError{ApiCode::kUnauthorized, "wrong bearer token"};
  return std::nullopt;
}

std::variant<std::string, std::string> readTokenFile(const std::string& path) {
  auto fail = [&](const std::string& why) { return std::variant<std::string, std::string>(std::in_place_index<1>, path + ": " + why); };
  platform::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return fail(std::string("open() failed: ") + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return fail(std::string("fstat() failed: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(std::string("is readable or writable by group or others (mode ") + mode + "); chmod 600 it");
  }
  std::string text;
  char buf[4096];
  while (text.size() <= 8192) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::string("read() failed: ") + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  if (auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ' || text.back() == '\t')) text.pop_back();
  if (text.size() < 16 || text.size() > 4096)
    return fail("the token must be 16 to 4096 bytes on the first line (it is " + std::to_string(text.size()) +
                "); generate one with: head -c 32 /dev/urandom | base64 > FILE");
  for (unsigned char c : text)
    if (c < 0x21 || c > 0x7e) return fail("the token contains a byte that is not printable ASCII");
  return std::variant<std::string, std::string>(std::in_place_index<0>, std::move(text));
}

}  // namespace stockade::daemon
