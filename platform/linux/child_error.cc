// ASYNC-SIGNAL-SAFE: used between clone and exec; no allocation, no locale,
// no stdio.
#include "platform/linux/child_error.h"

#include <cerrno>

namespace stockade::platform {

const char* setupStepName(SetupStep step) noexcept {
  switch (step) {
    case SetupStep::kNone: return "none";
    case SetupStep::kPrepare: return "prepare";
    case SetupStep::kCoverage: return "coverage";
    case SetupStep::kClone: return "clone";
    case SetupStep::kStdio: return "stdio";
    case SetupStep::kSignals: return "signals";
    case SetupStep::kCloseFds: return "close-fds";
    case SetupStep::kSession: return "session";
    case SetupStep::kParentDeath: return "parent-death-signal";
    case SetupStep::kIdMaps: return "id-maps";
    case SetupStep::kHostname: return "hostname";
    case SetupStep::kLoopback: return "loopback";
    case SetupStep::kProxyListeners: return "proxy-listeners";
    case SetupStep::kMounts: return "mounts";
    case SetupStep::kUserCounters: return "user-counters";
    case SetupStep::kTerminal: return "terminal";
    case SetupStep::kLimits: return "limits";
    case SetupStep::kCgroup: return "cgroup";
    case SetupStep::kCapabilities: return "capabilities";
    case SetupStep::kNoNewPrivs: return "no-new-privs";
    case SetupStep::kLandlock: return "landlock";
    case SetupStep::kSeccomp: return "seccomp";
    case SetupStep::kProgram: return "program";
    case SetupStep::kWorkingDir: return "working-directory";
    case SetupStep::kExec: return "exec";
  }
  return "unknown";
}

std::size_t ChildError::length() const noexcept {
  std::size_t n = 0;
  while (n < sizeof(call) && call[n] != '\0') ++n;
  return n;
}

void ChildError::clear() noexcept {
  step = 0;
  error = 0;
  call[0] = '\0';
}

ChildError& ChildError::add(const char* text) noexcept {
  std::size_t n = length();
  while (text != nullptr && *text != '\0' && n + 1 < sizeof(call)) call[n++] = *text++;
  call[n] = '\0';
  return *this;
}

ChildError& ChildError::quoted(const char* text) noexcept {
  // A path or argv the caller passed: every byte outside printable ASCII
  // (and the quote and backslash) as \xNN, as audit::printable() writes it,
  // so that no value becomes a line break or a terminal escape in a message.
  static constexpr char kHex[] = "0123456789abcdef";
  add("\"");
  for (; text != nullptr && *text != '\0'; ++text) {
    const auto c = static_cast<unsigned char>(*text);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      const char one[2] = {static_cast<char>(c), '\0'};
      add(one);
    } else {
      const char escaped[5] = {'\\', 'x', kHex[c >> 4], kHex[c & 0xf], '\0'};
      add(escaped);
    }
  }
  return add("\"");
}

ChildError& ChildError::number(long long value) noexcept {
  char digits[24];
  int i = 0;
  bool negative = value < 0;
  unsigned long long v = negative ? 0ULL - static_cast<unsigned long long>(value)
                                  : static_cast<unsigned long long>(value);
  do {
    digits[i++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && i < 22);
  if (negative) digits[i++] = '-';
  char out[24];
  int j = 0;
  while (i > 0) out[j++] = digits[--i];
  out[j] = '\0';
  return add(out);
}

ChildError& ChildError::hex(unsigned long long value) noexcept {
  char out[20] = {'0', 'x'};
  char digits[17];
  int i = 0;
  do {
    digits[i++] = "0123456789abcdef"[value & 0xf];
    value >>= 4;
  } while (value != 0);
  int j = 2;
  while (i > 0) out[j++] = digits[--i];
  out[j] = '\0';
  return add(out);
}

bool ChildError::fail(SetupStep failed) noexcept {
  step = static_cast<std::int32_t>(failed);
  error = errno;
  return false;
}

}  // namespace stockade::platform
