// The process service's values as the daemon's JSON (shared/API.md,
// "Processes"; seed 003's ProcessDto, WaitResult, LogFrame, StreamLogEvent,
// RunResult), and its errors as the daemon's.
#pragma once

#include <nlohmann/json.hpp>

#include "src/daemon/api_error.h"
#include "stockade/process.h"

namespace stockade::daemon {

nlohmann::json processJson(const ProcessDto& p);
nlohmann::json waitResultJson(const WaitResult& r);
nlohmann::json logFrameJson(const LogFrame& f);
// One NDJSON line (with its "\n") of a log stream.
std::string streamEventLine(const StreamLogEvent& e);
nlohmann::json runResultJson(const RunResult& r);

// not_found 404, timeout 408, stale_epoch 409, unsupported 409, unavailable
// 503, invalid_path 400.
ApiError apiErrorFor(const ProcessError& e);

// "2026-05-01T12:00:00.123Z"
std::string isoTime(std::chrono::system_clock::time_point t);

}  // namespace stockade::daemon
