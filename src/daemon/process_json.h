// The process service's values as the daemon's JSON (shared/API.md,
// "Processes"; seed 003's ProcessDto, WaitResult, LogFrame, StreamLogEvent,
// RunResult), and its errors as the daemon's.
#pragma once

#include <nlohmann/json.hpp>

#include "src/daemon/api_error.h"
#include "src/process/code_kernel.h"
#include "stockade/process.h"

namespace stockade::daemon {

nlohmann::json processJson(const ProcessDto& p);
nlohmann::json waitResultJson(const WaitResult& r);
nlohmann::json logFrameJson(const LogFrame& f);
// One NDJSON line (with its "\n") of a log stream.
std::string streamEventLine(const StreamLogEvent& e);
nlohmann::json runResultJson(const RunResult& r);
// seed 002's Execution: {results, logs: {stdout, stderr}, error, ...}. Each
// result has the Jupyter names of its formats (text, html, markdown, svg,
// png, jpeg, pdf, latex, json, javascript; others under "extra" by MIME
// type) and isMainResult.
nlohmann::json executionJson(const process::Execution& e);

// not_found 404, timeout 408, stale_epoch 409, unsupported 409, unavailable
// 503, invalid_path 400.
ApiError apiErrorFor(const ProcessError& e);

// "2026-05-01T12:00:00.123Z"
std::string isoTime(std::chrono::system_clock::time_point t);

}  // namespace stockade::daemon
