// The one audit event schema of stockade, for the library, the CLI and the
// daemon alike: one JSON object per line,
//   {"time": "2025-01-02T03:04:05.678Z", "event": "spawn", "sandboxId": "sbx-...",
//    "processId" | "runId": "...", ...event fields}
// `time` is ISO 8601 UTC with milliseconds, always. Every string is escaped
// so that no control character, and no byte outside printable ASCII, reaches
// the sink raw: values a child chose (host names, paths, argv) cannot become
// terminal escapes, line breaks or shell syntax in whatever reads the log.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "stockade/policy.h"

namespace stockade::audit {

using Clock = std::chrono::system_clock;

// "2025-01-02T03:04:05.678Z"
std::string timestamp(Clock::time_point when);

// The event as one line of JSON without the trailing newline. `fields` must
// be an object (anything else is ignored); `time` and `event` are set here
// and override fields of those names. Invalid UTF-8 in a string becomes
// U+FFFD; every non-ASCII or control character is written \uXXXX.
std::string line(std::string_view event, nlohmann::json fields, Clock::time_point when);

// Bytes for a human-readable message (stderr, spdlog): quoted, with every
// byte outside printable ASCII (and the quote and backslash) escaped as \xNN.
// Use it for every value a child could have chosen.
std::string printable(std::string_view bytes);

// A policy's sandbox-runtime notes (PolicyNote), as the audit events and
// `stockade policy check --json` give them: [{"kind", "path", "why"}], kind
// "not-applicable" or "stronger".
nlohmann::json policyNotes(const SandboxPolicy& policy);

}  // namespace stockade::audit
