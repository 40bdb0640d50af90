#include "src/audit/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace stockade::audit {
namespace {

thread_local bool tInsideSink = false;

std::shared_ptr<spdlog::logger> stockadeLogger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::get("stockade");
    return l ? l : spdlog::stderr_color_mt("stockade");
  }();
  return logger;
}

std::string stringField(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Log::Log(Limits limits) : limits_(limits) {}

bool Log::insideSink() noexcept { return tInsideSink; }

void Log::setSink(Sink sink) {
  std::lock_guard lock(sinkMu_);
  sink_ = std::move(sink);
}

void Log::discardEvents() noexcept { discarding_.store(true, std::memory_order_relaxed); }

void Log::setLimits(Limits limits) {
  std::lock_guard lock(mu_);
  limits_ = limits;
}

void Log::emit(std::string_view event, nlohmann::json fields, Clock::time_point when, bool forced) noexcept try {
  if (!wanted()) return;
  std::lock_guard sinkLock(sinkMu_);
  const std::string sandboxId = stringField(fields, "sandboxId");
  bool announceCap = false;
  bool writeEvent = true;
  std::size_t cap = 0;
  if (!sandboxId.empty() && !forced) {
    std::lock_guard lock(mu_);
    cap = limits_.maxEventsPerSandbox;
    auto& counts = sandboxes_[sandboxId];
    if (cap != 0 && counts.written >= cap) {
      writeEvent = false;
      announceCap = counts.dropped++ == 0;
    } else {
      ++counts.written;
    }
  }
  std::vector<std::string> lines;
  if (announceCap) {
    lines.push_back(line("audit_capped",
                         {{"sandboxId", sandboxId},
                          {"limit", cap},
                          {"message", "this sandbox wrote its maximum of audit events; later ones are counted in "
                                      "audit_dropped when it ends"}},
                         when));
  }
  if (writeEvent) lines.push_back(line(event, std::move(fields), when));
  for (const auto& text : lines) {
    if (!sink_) {
      stockadeLogger()->info("audit {}", text);
      continue;
    }
    tInsideSink = true;
    try {
      sink_(text);
    } catch (const std::exception& e) {
      stockadeLogger()->error("audit sink threw ({}) on {}", e.what(), text);
    } catch (...) {
      stockadeLogger()->error("audit sink threw on {}", text);
    }
    tInsideSink = false;
  }
} catch (...) {
  // Building the event failed (allocation): nothing more can be said safely.
  tInsideSink = false;
}

void Log::write(std::string_view event, nlohmann::json fields) noexcept {
  emit(event, std::move(fields), Clock::now(), /*forced=*/true);
}

void Log::decision(std::string_view event, nlohmann::json fields, std::initializer_list<std::string_view> key,
                   std::initializer_list<std::string_view> summed) noexcept try {
  if (!wanted()) return;
  const auto now = Clock::now();
  nlohmann::json identity = nlohmann::json::object();
  for (const char* name : {"sandboxId", "runId", "processId"})
    if (auto it = fields.find(name); it != fields.end()) identity[name] = *it;
  for (std::string_view name : key)
    if (auto it = fields.find(std::string(name)); it != fields.end()) identity[std::string(name)] = *it;
  std::string id = std::string(event) + '\n' + identity.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  {
    std::lock_guard lock(mu_);
    auto it = repeated_.find(id);
    if (it != repeated_.end()) {
      Repeated& r = it->second;
      if (r.pending++ == 0) r.first = now;
      r.last = now;
      for (std::string_view name : summed) {
        auto value = fields.find(std::string(name));
        if (value == fields.end() || !value->is_number()) continue;
        auto& total = r.sums[std::string(name)];
        if (value->is_number_float() || total.is_number_float())
          total = total.is_null() ? value->get<double>() : total.get<double>() + value->get<double>();
        else
          total = total.is_null() ? value->get<std::int64_t>() : total.get<std::int64_t>() + value->get<std::int64_t>();
      }
      return;
    }
    Repeated r;
    r.fields = std::move(identity);
    r.event = std::string(event);
    r.sandboxId = stringField(fields, "sandboxId");
    repeated_.emplace(std::move(id), std::move(r));
  }
  emit(event, std::move(fields), now, /*forced=*/false);
} catch (...) {
}

void Log::flushLocked(const std::string* onlySandbox, std::vector<Repeated>& out) {
  for (auto it = repeated_.begin(); it != repeated_.end();) {
    Repeated& r = it->second;
    if (onlySandbox && r.sandboxId != *onlySandbox) {
      ++it;
      continue;
    }
    if (r.pending != 0) out.push_back(r);
    // Quiet since the last flush, or its sandbox ended: forgotten, so the
    // next occurrence is written at once again.
    if (r.pending == 0 || onlySandbox) {
      it = repeated_.erase(it);
    } else {
      r.pending = 0;
      r.sums = nlohmann::json::object();
      ++it;
    }
  }
}

void Log::emitRepeated(Repeated r) noexcept {
  nlohmann::json fields = std::move(r.fields);
  fields.update(r.sums);
  fields["count"] = r.pending;
  fields["firstTime"] = timestamp(r.first);
  fields["lastTime"] = timestamp(r.last);
  fields["repeated"] = true;
  emit(r.event, std::move(fields), Clock::now(), /*forced=*/false);
}

void Log::flush() noexcept try {
  std::vector<Repeated> due;
  {
    std::lock_guard lock(mu_);
    flushLocked(nullptr, due);
  }
  for (auto& r : due) emitRepeated(std::move(r));
} catch (...) {
}

void Log::closeSandbox(const std::string& sandboxId) noexcept try {
  std::vector<Repeated> due;
  {
    std::lock_guard lock(mu_);
    flushLocked(&sandboxId, due);
  }
  for (auto& r : due) emitRepeated(std::move(r));
  PerSandbox counts;
  {
    std::lock_guard lock(mu_);
    if (auto it = sandboxes_.find(sandboxId); it != sandboxes_.end()) {
      counts = it->second;
      sandboxes_.erase(it);
    }
  }
  if (counts.dropped != 0)
    emit("audit_dropped", {{"sandboxId", sandboxId}, {"dropped", counts.dropped}, {"written", counts.written}},
         Clock::now(), /*forced=*/true);
} catch (...) {
}

}  // namespace stockade::audit
