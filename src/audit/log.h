// The audit stream of one supervisor: every event of the library, the CLI
// and the daemon goes through one Log, in the schema of event.h, to one sink.
//
// Floods from inside a sandbox (a child hammering a denied host or a denied
// syscall) must not become floods on the host, so:
//  - decision(): a repeated identical decision (same event, sandbox, process
//    and key fields) is written once when first seen; its repeats are counted
//    and written as ONE event with "count", "firstTime" and "lastTime" when
//    the log is flushed (flush(): on the supervisor's timer, and at the end
//    of the sandbox);
//  - every sandbox has a cap on the decisions written for it; past it,
//    decisions are counted, not written, and closeSandbox() writes one final
//    "audit_dropped" event with the count. One-off events (write(): spawn,
//    exit, ...) are the host's own, one per action of it, and never capped:
//    a child that floods the cap cannot keep its own exit (which counts its
//    denials) out of the log.
//
// Thread-safety: every member function may be called from any thread. Lines
// reach the sink one at a time, in the order they were written.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "src/audit/event.h"

namespace stockade::audit {

struct Limits {
  // Decisions written per sandbox (by "sandboxId", repeat lines included)
  // before the rest are dropped and counted; 0: no cap. One-off events are
  // not capped.
  std::size_t maxEventsPerSandbox = 10000;
};

// Receives one line (event.h, no newline). Must only record: it runs with
// the log's sink lock held, on whatever thread wrote the event.
using Sink = std::function<void(const std::string& line)>;

class Log {
 public:
  explicit Log(Limits limits = {});
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Without a sink lines go to stderr through spdlog's "stockade" logger.
  void setSink(Sink sink);
  void setLimits(Limits limits);
  // No event is wanted (`stockade run` without --audit): every later event
  // is dropped unwritten, unbuilt where the writer asks wanted() first.
  void discardEvents() noexcept;
  bool wanted() const noexcept { return !discarding_.load(std::memory_order_relaxed); }

  // A one-off event (admit, spawn, exit, dispose, ...), never capped. Never throws; a sink
  // that throws is reported through spdlog.
  void write(std::string_view event, nlohmann::json fields = nlohmann::json::object()) noexcept;

  // A decision that may repeat (a proxy verdict, a seccomp denial). `key`
  // names the fields that make two decisions the same, beside the event,
  // "sandboxId", "runId" and "processId". `summed` names numeric fields that
  // measure each occurrence (bytes, durations): the line for the repeats
  // carries their totals over the repeats, so folding never hides how much
  // went through. Other fields are written with the first occurrence only.
  void decision(std::string_view event, nlohmann::json fields, std::initializer_list<std::string_view> key,
                std::initializer_list<std::string_view> summed = {}) noexcept;

  // Writes the counts of repeated decisions seen since the last flush.
  void flush() noexcept;
  // The sandbox has ended: flushes its decisions, writes "audit_dropped"
  // when its cap dropped events, and forgets it.
  void closeSandbox(const std::string& sandboxId) noexcept;

  // True on a thread that is inside this process's audit sink right now
  // (the manager refuses to be re-entered from its sink).
  static bool insideSink() noexcept;

 private:
  struct Repeated {
    nlohmann::json fields;  // the identity: event-independent fields of the key
    nlohmann::json sums = nlohmann::json::object();  // the summed fields over the repeats
    std::string event;
    std::string sandboxId;
    std::size_t pending = 0;  // seen since the last line written for it
    Clock::time_point first, last;
  };
  struct PerSandbox {
    std::size_t written = 0;
    std::size_t dropped = 0;
  };
  // Applies the cap and hands the line to the sink. `forced`: not capped.
  void emit(std::string_view event, nlohmann::json fields, Clock::time_point when, bool forced) noexcept;
  // The line for the repeats of one decision: its identity, "count", "firstTime", "lastTime".
  void emitRepeated(Repeated r) noexcept;
  void flushLocked(const std::string* onlySandbox, std::vector<Repeated>& out);

  std::mutex mu_;  // limits_, repeated_, sandboxes_
  Limits limits_;
  std::map<std::string, Repeated> repeated_;  // by identity (event + key fields as JSON)
  std::map<std::string, PerSandbox> sandboxes_;
  std::mutex sinkMu_;  // held while the sink runs: one line at a time, in order
  Sink sink_;
  std::atomic<bool> discarding_{false};
};

}  // namespace stockade::audit
