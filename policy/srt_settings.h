// Anthropic sandbox-runtime (srt) settings keys that are not stockade policy
// fields, and what stockade does with each. The policy format takes srt's
// field names, so an srt settings file loads as a policy: a key listed here is
// accepted or refused by this table, never silently dropped; any other
// unknown key is an error. docs/srt-compat.md is this table for users (a
// test keeps the two in step).
#pragma once

#include <span>
#include <string_view>

namespace stockade::policy {

enum class SrtHandling {
  kSame,           // what stockade does anyway: accepted, nothing to say
  kStronger,       // accepted; stockade enforces more than the key asks for (noted)
  kNotApplicable,  // accepted; has no meaning on Linux or in stockade (one warning lists these)
  kRefused,        // refused: honouring it would weaken enforcement, which stockade cannot do
};

struct SrtKey {
  std::string_view path;  // JSON path: "allowAppleEvents", "network.httpProxyPort"
  // A boolean key is handled by its value; any other key by `other`.
  bool boolean;
  SrtHandling whenTrue;
  SrtHandling whenFalse;
  SrtHandling other;
  std::string_view why;  // what stockade does instead, for the warning, the refusal and the docs
};

// Every row, in the order of docs/srt-compat.md.
std::span<const SrtKey> srtKeys() noexcept;
// The row for `path`, or nullptr.
const SrtKey* findSrtKey(std::string_view path) noexcept;

// How a boolean key applies to `value` (whenTrue or whenFalse).
SrtHandling srtHandling(const SrtKey& key, bool value) noexcept;

}  // namespace stockade::policy
