// A code kernel of one sandbox (seed 002's runCode): a Python process of the
// sandbox's process service that keeps its state (variables, imports,
// functions) across calls, like a Jupyter kernel, and answers each call with
// an Execution {results, logs, error}.
//
// The kernel is an IPython InteractiveShell in a python3 process started by
// the sandbox's process service (kind "code"), so it runs under that
// sandbox's live rules exactly as any of its processes: filesystem, network
// through its own proxy listeners, env.allow, limits; it is listed, killed
// with the sandbox, and recorded by the daemon's ledger like the others.
// Its driver (code_driver.py, embedded in the binary) comes on its stdin; the
// protocol is in that file. User output can never pass for a frame: frames
// carry a random tag, and what is not a frame is the running call's output.
//
// Calls on one kernel run one at a time, in order: a call waits for the one
// before it (or until its caller gives up, `stop`). A call's timeout counts
// from when its code starts: past it the cell is interrupted (SIGINT, a
// KeyboardInterrupt in the code, as Jupyter does) and the call answers with
// error TimeoutError; the state survives. A cell still running
// kInterruptGrace after the interrupt, or a kernel that ends (os._exit, a
// memory limit, a kill), makes that call's error KernelDied; the next call
// starts a fresh kernel and says the state was lost (Execution::stateLost).
//
// Thread-safety: every member function may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "src/process/code_languages.h"  // kCodeLanguages: a request naming another is a caller bug
#include "src/process/service.h"

namespace stockade::process {

// How long a cell may run on after its timeout's interrupt before the kernel is killed.
inline constexpr auto kInterruptGrace = std::chrono::seconds(5);
// How long a new kernel may take to report ready (IPython's import).
inline constexpr auto kKernelStartTimeout = std::chrono::seconds(60);
// What one call keeps of its output (stdout and stderr together) and of its
// results; beyond, they are dropped (Execution::logsTruncated,
// resultsTruncated). A frame over kMaxFrameBytes ends the kernel.
inline constexpr std::size_t kMaxCallLogBytes = 8u << 20;
inline constexpr std::size_t kMaxCallResultBytes = 32u << 20;
// A frame from the kernel nested deeper ends the kernel (a protocol error):
// far more than any result IPython makes, far less than would exhaust the
// stack of the thread that serialises the reply.
inline constexpr int kMaxFrameDepth = 256;
inline constexpr std::size_t kMaxFrameBytes = 32u << 20;

struct CodeRequest {
  std::string code;
  std::string language = "python";
  std::optional<std::chrono::milliseconds> timeout;  // none: unbounded
};

// One result: a MIME bundle ("text/plain", "text/html", "image/png" as
// base64, "application/json" as JSON, ...). The value of the cell's last
// expression is the main result; display() calls add others, in order.
struct CodeResult {
  nlohmann::json data = nlohmann::json::object();
  bool isMainResult = false;
};

struct CodeError {
  std::string name;   // "ZeroDivisionError", "TimeoutError", "KernelDied"
  std::string value;  // str() of the exception, or what happened
  std::string traceback;
};

struct Execution {
  std::vector<CodeResult> results;
  std::vector<std::string> stdout;  // chunks in the order written (small ones joined, up to 64 KiB)
  std::vector<std::string> stderr;
  std::optional<CodeError> error;
  std::optional<int> executionCount;  // the cell's number in this kernel
  std::string kernelId;               // the kernel's process id
  bool newKernel = false;             // this call started the kernel
  std::optional<std::string> stateLost;  // a fresh kernel replaced one that ended: why
  bool logsTruncated = false;
  bool resultsTruncated = false;
};

// What the owner records of a kernel's start (the daemon's ledger): called
// before the kernel is launched, with the processKey it is launched under,
// and once it runs or failed to.
struct KernelRecorder {
  std::function<std::optional<ProcessError>(const std::string& processKey)> beforeStart;
  std::function<void(const std::string& processKey, const ProcessDto& dto)> afterStart;
};

class CodeKernel {
 public:
  explicit CodeKernel(std::shared_ptr<ServiceCore> core, KernelRecorder recorder = {});
  ~CodeKernel();  // kills the kernel
  CodeKernel(const CodeKernel&) = delete;
  CodeKernel& operator=(const CodeKernel&) = delete;

  // Runs `request.code` in the kernel (started first when there is none).
  // Throws std::invalid_argument for an empty code or an unsupported
  // language, SandboxError when the kernel cannot be spawned (drift, a
  // failed spawn). ProcessError: stale_epoch (the sandbox is gone),
  // unavailable (no python3 with IPython in the sandbox; the caller left
  // while waiting for the call before), timeout (the kernel did not start).
  ProcessResult<Execution> run(const CodeRequest& request, std::stop_token stop = {});

 private:
  class Process;  // one kernel process (code_kernel.cc)
  ProcessResult<std::shared_ptr<Process>> start(std::stop_token stop);

  const std::shared_ptr<ServiceCore> core_;
  const KernelRecorder recorder_;
  mutable std::mutex mu_;
  std::condition_variable_any idle_;
  bool busy_ = false;                  // a call runs
  std::shared_ptr<Process> kernel_;    // under mu_; the call that holds busy_ replaces it
  std::optional<std::string> lost_;    // why the last kernel's state is gone, for the next call
  std::uint64_t nextCall_ = 1;
};

}  // namespace stockade::process
