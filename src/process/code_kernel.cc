#include "src/process/code_kernel.h"

#include <signal.h>

#include <stdexcept>

#include "policy/json_reader.h"
#include "src/process/code_driver_source.h"  // generated from code_driver.py (src/CMakeLists.txt)
#include "src/process/launcher.h"
#include "src/process/registry.h"

namespace stockade::process {

using nlohmann::json;

namespace {

constexpr char kMarker = '\036';
constexpr std::size_t kJoinedChunkBytes = 64u << 10;

// What python3 runs: it reads the driver and the frame tag's nonce from the
// first line of its stdin (unbuffered, so no later byte is read ahead).
constexpr const char* kBootstrap =
    "import sys,json;_stockade=json.loads(sys.stdin.buffer.raw.readline());exec(_stockade[\"driver\"])";

std::string describe(const std::optional<WaitResult>& result, const std::optional<std::string>& killedByLimit) {
  if (killedByLimit) return "it was killed for passing " + *killedByLimit;
  if (!result) return "it ended";
  if (auto* e = std::get_if<Exited>(&*result)) return "it exited with status " + std::to_string(e->exitCode);
  if (auto* s = std::get_if<Signaled>(&*result)) return "it was killed by " + s->signal;
  if (std::holds_alternative<TimedOut>(*result)) return "it passed its execution deadline";
  if (auto* l = std::get_if<Lost>(&*result)) return "its supervision ended (" + l->detail + ")";
  if (auto* f = std::get_if<Failed>(&*result)) return "it failed: " + f->detail;
  return "it ended";
}

}  // namespace

// One kernel process: its record, the protocol parser fed by the supervisor
// loop, and the state of the call it serves. Everything under `mu`.
class CodeKernel::Process : public std::enable_shared_from_this<CodeKernel::Process> {
 public:
  explicit Process(std::shared_ptr<Record> record)
      : record_(std::move(record)), tag_(std::string(1, kMarker) + "STK" + newId("n").substr(2) + " ") {}

  const std::string& id() const { return id_; }
  std::string nonce() const { return tag_.substr(4, tag_.size() - 5); }
  void setId(std::string id) { id_ = std::move(id); }
  const std::shared_ptr<Record>& record() const { return record_; }

  // Loop thread.
  void onOutput(LogChannel channel, std::string_view bytes) {
    std::lock_guard lock(mu);
    if (channel == LogChannel::kStderr) {
      raw(LogChannel::kStderr, bytes);
      return;
    }
    buffer_.append(bytes);
    for (;;) {
      const auto at = buffer_.find(tag_);
      if (at == std::string::npos) {
        std::size_t keep = 0;  // a tail that could be the start of a tag
        for (std::size_t k = std::min(buffer_.size(), tag_.size() - 1); k > 0; --k)
          if (buffer_.compare(buffer_.size() - k, k, tag_, 0, k) == 0) {
            keep = k;
            break;
          }
        raw(LogChannel::kStdout, std::string_view(buffer_).substr(0, buffer_.size() - keep));
        buffer_.erase(0, buffer_.size() - keep);
        return;
      }
      raw(LogChannel::kStdout, std::string_view(buffer_).substr(0, at));
      const auto end = buffer_.find(kMarker, at + tag_.size());
      if (end == std::string::npos) {
        buffer_.erase(0, at);
        if (buffer_.size() > kMaxFrameBytes + tag_.size()) {
          buffer_.clear();
          broken("it wrote a frame over " + std::to_string(kMaxFrameBytes >> 20) + " MiB");
        }
        return;
      }
      const std::string body = buffer_.substr(at + tag_.size(), end - at - tag_.size());
      buffer_.erase(0, end + 1);
      onFrame(body);
    }
  }

  void onEnd(const Ending& ending) {
    // The record says it ended (a processes API wait returns) only once
    // `ended` is set under `mu`: a code call after that wait found the
    // record gone but not `ended`, and answered 503 instead of starting a
    // fresh kernel. (Order: `mu`, then the record's lock, as code() takes them.)
    std::lock_guard lock(mu);
    record_->ended(ending);
    raw(LogChannel::kStdout, buffer_);
    buffer_.clear();
    const ProcessDto dto = record_->snapshot();
    ended = describe(record_->result(), dto.metrics.killedByLimit);
    changed.notify_all();
  }

  // A new call (`mu` held).
  void begin(std::uint64_t call) {
    call_ = call;
    done = false;
    exec = Execution{};
    logBytes_ = 0;
    resultBytes_ = 0;
  }
  void finish() { call_ = 0; }

  // Kills the process once, saying why its protocol broke (`mu` held).
  void broken(const std::string& why) {
    if (!protocolError) protocolError = why;
    if (auto s = record_->supervised()) s->kill(SIGKILL);
  }

  std::mutex mu;
  std::condition_variable_any changed;
  bool ready = false;
  std::optional<std::string> fatal;         // the driver could not start IPython
  std::optional<std::string> ended;         // why the process ended
  std::optional<std::string> protocolError;
  bool done = false;                        // the current call's answer came
  Execution exec;                           // the current call's answer so far

 private:
  // Output of the current call, within kMaxCallLogBytes; small pieces are
  // joined (a chunk per write of a byte would cost far more than the byte).
  void keep(std::vector<std::string>& into, std::string_view text) {
    if (text.empty()) return;
    if (logBytes_ + text.size() > kMaxCallLogBytes) {
      exec.logsTruncated = true;
      text = text.substr(0, kMaxCallLogBytes - logBytes_);
      if (text.empty()) return;
    }
    logBytes_ += text.size();
    if (!into.empty() && into.back().size() + text.size() <= kJoinedChunkBytes) into.back().append(text);
    else into.emplace_back(text);
  }

  // A result of the current call, within kMaxCallResultBytes.
  void result(json data, bool main, std::size_t size) {
    if (resultBytes_ + size > kMaxCallResultBytes) {
      exec.resultsTruncated = true;
      return;
    }
    resultBytes_ += size;
    exec.results.push_back(CodeResult{std::move(data), main});
  }

  // Bytes outside any frame: the running call's output, else the process's log.
  void raw(LogChannel channel, std::string_view bytes) {
    if (bytes.empty()) return;
    if (call_) keep(channel == LogChannel::kStderr ? exec.stderr : exec.stdout, bytes);
    else record_->output(channel, bytes);
  }

  void onFrame(const std::string& body) {
    // The frame is the sandbox's bytes (code can forge one: it shares the
    // driver's interpreter), and its values are serialised into the reply by
    // recursion: a frame nested deeper than kMaxFrameDepth ends the kernel
    // before it is parsed (a forged 200,000-deep one crashed the daemon).
    if (policy::jsonNestingDepth(body) > kMaxFrameDepth) {
      broken("it wrote a frame nested deeper than " + std::to_string(kMaxFrameDepth) + " levels");
      return;
    }
    json frame = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (!frame.is_object() || !frame.contains("type") || !frame["type"].is_string()) {
      broken("it wrote a frame that is not a JSON object with a type");
      return;
    }
    const std::string type = frame["type"];
    auto text = [&](const char* key) -> std::string {
      auto it = frame.find(key);
      return it != frame.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    if (type == "ready") {
      ready = true;
    } else if (type == "fatal") {
      fatal = text("message");
    } else if (type == "stream") {
      const LogChannel channel = text("name") == "stderr" ? LogChannel::kStderr : LogChannel::kStdout;
      if (call_) keep(channel == LogChannel::kStderr ? exec.stderr : exec.stdout, text("text"));
      else record_->output(channel, text("text"));  // a thread of the code's, between calls
    } else if (type == "display") {
      if (call_ && frame.contains("data") && frame["data"].is_object())
        result(std::move(frame["data"]), false, body.size());
    } else if (type == "done") {
      if (!call_ || !frame.contains("id") || frame["id"] != call_) return;  // not this call's (a stale or forged one)
      if (frame.contains("result") && frame["result"].is_object()) result(std::move(frame["result"]), true, body.size());
      if (frame.contains("executionCount") && frame["executionCount"].is_number_integer())
        exec.executionCount = frame["executionCount"].get<int>();
      if (frame.contains("error") && frame["error"].is_object()) {
        const json& e = frame["error"];
        auto field = [&](const char* key) {
          return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
        };
        exec.error = CodeError{field("name"), field("value"), field("traceback")};
      }
      // Done once stderr is read too: what the code's subprocesses wrote
      // there before this frame may not have been read yet (it comes on
      // another pipe), and it belongs to this call's logs.
      auto supervised = record_->supervised();
      if (!supervised) {
        done = true;
      } else {
        supervised->drainOutputs([weak = weak_from_this(), call = call_] {
          auto self = weak.lock();
          if (!self) return;
          std::lock_guard lock(self->mu);
          if (self->call_ == call) self->done = true;
          self->changed.notify_all();
        });
      }
    }
    changed.notify_all();
  }

  const std::shared_ptr<Record> record_;
  const std::string tag_;  // "\036STK<nonce> "
  std::string id_;
  std::string buffer_;     // stdout bytes that may hold the start of a frame
  std::uint64_t call_ = 0; // the call being served, 0 between calls
  std::size_t logBytes_ = 0;
  std::size_t resultBytes_ = 0;
};

CodeKernel::CodeKernel(std::shared_ptr<ServiceCore> core, KernelRecorder recorder)
    : core_(std::move(core)), recorder_(std::move(recorder)) {}

CodeKernel::~CodeKernel() {
  std::lock_guard lock(mu_);
  if (kernel_)
    if (auto s = kernel_->record()->supervised()) s->kill(SIGKILL);
}

ProcessResult<std::shared_ptr<CodeKernel::Process>> CodeKernel::start(std::stop_token stop) {
  auto python = findProgram("python3");
  if (!python)
    return ProcessError{ProcessErrorCode::kUnavailable,
                        "python3 is not installed on this host (/usr/local/bin, /usr/bin, /bin); install python3 "
                        "and python3-ipython (Debian) to run code"};
  ProcessDto dto;
  dto.id = newId("proc");
  dto.name = "python kernel";
  dto.kind = ProcessKind::kCode;
  dto.stdin = StdinMode::kOpen;  // the protocol's requests: only the kernel's owner writes them
  dto.argv = std::vector<std::string>{*python, "-c", kBootstrap};
  dto.processKey = newId("pk_code");
  dto.cwd = core_->defaultCwd();  // as any process of the sandbox started without a cwd
  const std::string processKey = *dto.processKey;
  if (recorder_.beforeStart)
    if (auto e = recorder_.beforeStart(processKey)) return *e;
  auto record = core_->makeRecord(std::move(dto));
  auto kernel = std::make_shared<Process>(record);
  kernel->setId(record->snapshot().id);
  ServiceCore::Hooks hooks;
  std::weak_ptr<Process> weak = kernel;
  hooks.onOutput = [weak](LogChannel channel, std::string_view bytes) {
    if (auto k = weak.lock()) k->onOutput(channel, bytes);
  };
  hooks.onEnd = [kernel](const Ending& e) { kernel->onEnd(e); };
  ProcessStatus launched;
  try {
    launched = core_->launch(record, {}, std::move(hooks));
  } catch (...) {
    if (recorder_.afterStart) recorder_.afterStart(processKey, record->snapshot());
    throw;
  }
  if (recorder_.afterStart) recorder_.afterStart(processKey, record->snapshot());
  if (launched) return *launched;
  auto supervised = record->supervised();
  if (!supervised || !supervised->writeStdin(json{{"driver", std::string(kCodeDriverSource)}, {"nonce", kernel->nonce()}}
                                                     .dump() + "\n",
                                                 false))
    return ProcessError{ProcessErrorCode::kUnavailable, "the python kernel " + kernel->id() + " ended at once"};

  std::unique_lock lock(kernel->mu);
  const bool settled = kernel->changed.wait_for(lock, stop, kKernelStartTimeout, [&] {
    return kernel->ready || kernel->fatal || kernel->ended;
  });
  if (kernel->ready) return kernel;
  if (auto s = record->supervised()) s->kill(SIGKILL);
  if (kernel->fatal)
    return ProcessError{ProcessErrorCode::kUnavailable,
                        "the python kernel cannot run here: " + *kernel->fatal +
                            "; install python3-ipython (Debian) on the host, and let the sandbox read it"};
  if (kernel->ended) {
    std::string why = *kernel->ended;
    std::lock_guard rl(record->mu);
    auto page = record->ring.read(0, 64);
    std::string output;
    for (const auto& f : page.frames) output += f.bytes;
    if (output.size() > 2000) output = output.substr(output.size() - 2000);
    return ProcessError{ProcessErrorCode::kUnavailable, "the python kernel " + kernel->id() +
                                                            " ended before it was ready: " + why +
                                                            (output.empty() ? "" : "; it said: " + output)};
  }
  if (!settled && stop.stop_requested())
    return ProcessError{ProcessErrorCode::kUnavailable, "the caller left while the python kernel started"};
  return ProcessError{ProcessErrorCode::kTimeout,
                      "the python kernel " + kernel->id() + " did not start within " +
                          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kKernelStartTimeout).count()) +
                          " s; it was killed"};
}

ProcessResult<Execution> CodeKernel::run(const CodeRequest& request, std::stop_token stop) {
  bool supported = false;
  std::string languages;
  for (std::string_view l : kCodeLanguages) {
    supported = supported || l == request.language;
    languages += (languages.empty() ? "" : ", ") + std::string(l);
  }
  if (!supported)
    throw std::invalid_argument("language \"" + request.language + "\" is not one this kernel runs; supported: " +
                                languages);
  if (request.code.find_first_not_of(" \t\r\n") == std::string::npos)
    throw std::invalid_argument("code is empty; pass the code to run");
  if (request.timeout && request.timeout->count() <= 0)
    throw std::invalid_argument("timeout " + std::to_string(request.timeout->count()) +
                                " ms is not positive; omit it for no limit");

  // One call at a time: wait for the slot.
  {
    std::unique_lock lock(mu_);
    if (!idle_.wait(lock, stop, [&] { return !busy_; }))
      return ProcessError{ProcessErrorCode::kUnavailable,
                          "the caller left while the sandbox's previous code call still ran"};
    busy_ = true;
  }
  struct Release {
    CodeKernel& k;
    ~Release() {
      std::lock_guard lock(k.mu_);
      k.busy_ = false;
      k.idle_.notify_one();
    }
  } release{*this};
  if (auto e = core_->stale()) return *e;

  std::shared_ptr<Process> kernel;
  bool fresh = false;
  std::optional<std::string> lost;
  std::uint64_t call = 0;
  {
    std::lock_guard lock(mu_);
    kernel = kernel_;
    call = nextCall_++;
  }
  if (kernel) {
    std::lock_guard k(kernel->mu);
    if (kernel->ended) {
      std::lock_guard lock(mu_);
      if (!lost_) lost_ = "the previous kernel (" + kernel->id() + ") ended between calls: " + *kernel->ended;
      kernel.reset();
    }
  }
  if (!kernel) {
    auto started = start(stop);
    if (auto* e = std::get_if<ProcessError>(&started)) return *e;
    kernel = std::get<std::shared_ptr<Process>>(std::move(started));
    fresh = true;
    std::lock_guard lock(mu_);
    kernel_ = kernel;
    lost = std::exchange(lost_, std::nullopt);
  }

  std::unique_lock lock(kernel->mu);
  kernel->begin(call);
  auto supervised = kernel->record()->supervised();
  if (!supervised ||
      !supervised->writeStdin(json{{"id", call}, {"code", request.code}}.dump(-1, ' ', true, json::error_handler_t::replace) + "\n", false)) {
    kernel->finish();
    return ProcessError{ProcessErrorCode::kUnavailable, "the python kernel " + kernel->id() + " is not taking input"};
  }

  enum class Phase { kRunning, kInterrupted, kKilled } phase = Phase::kRunning;
  std::optional<Clock::time_point> deadline;
  if (request.timeout) deadline = Clock::now() + *request.timeout;
  bool timedOut = false, callerLeft = false, killedAfterInterrupt = false;
  const auto settled = [&] { return kernel->done || kernel->ended.has_value(); };
  while (!settled()) {
    std::stop_token waitStop = callerLeft ? std::stop_token{} : stop;
    if (deadline) kernel->changed.wait_until(lock, waitStop, *deadline, settled);
    else kernel->changed.wait(lock, waitStop, settled);
    if (settled()) break;
    const bool expired = deadline && Clock::now() >= *deadline;
    const bool left = !callerLeft && stop.stop_requested();
    if (!expired && !left) continue;
    if (left) callerLeft = true;
    if (phase == Phase::kRunning) {
      // A caller that left or a timeout: the cell is interrupted, as Jupyter's interrupt does.
      timedOut = expired;
      supervised->kill(SIGINT);
      phase = Phase::kInterrupted;
      deadline = Clock::now() + kInterruptGrace;
    } else if (phase == Phase::kInterrupted && expired) {
      supervised->kill(SIGKILL);
      killedAfterInterrupt = true;
      phase = Phase::kKilled;
      deadline = Clock::now() + std::chrono::seconds(30);
    } else if (phase == Phase::kKilled && expired) {
      break;  // never seen: the supervisor always reports an end
    }
  }

  Execution out = std::move(kernel->exec);
  kernel->finish();
  out.kernelId = kernel->id();
  out.newKernel = fresh;
  out.stateLost = lost;
  const std::string timeoutText =
      request.timeout ? std::to_string(request.timeout->count()) + " ms" : std::string("its timeout");
  if (!kernel->done) {
    std::string why = kernel->protocolError ? "its driver broke the protocol: " + *kernel->protocolError
                      : killedAfterInterrupt
                          ? "the code ran past its timeout of " + timeoutText + " and did not stop within " +
                                std::to_string(kInterruptGrace.count()) + " s of the interrupt (SIGINT), so it was killed"
                          : kernel->ended.value_or("it did not answer");
    out.error = CodeError{"KernelDied",
                          "the python kernel (" + kernel->id() + ") ended while running this code: " + why +
                              "; its variables, imports and functions are lost, and the next call starts a fresh kernel",
                          ""};
    lock.unlock();
    std::lock_guard l(mu_);
    lost_ = "the previous kernel (" + kernel->id() + ") ended during an earlier call: " + why;
    if (kernel_ == kernel) kernel_.reset();
    return out;
  }
  if (timedOut) {
    std::string traceback = out.error ? out.error->traceback : std::string();
    out.error = CodeError{"TimeoutError",
                          "the code ran past its timeout of " + timeoutText +
                              " and was interrupted (SIGINT, a KeyboardInterrupt in the code); the kernel's state is kept",
                          std::move(traceback)};
  }
  return out;
}

}  // namespace stockade::process
