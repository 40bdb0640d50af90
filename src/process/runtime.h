// Everything one process needs to run sandboxed children, in the order it
// must be torn down: the launcher, then the supervisor (kills what is left),
// then the proxy, the spawner thread and the audit log. The library's
// manager holds one; `stockade run` makes its own.
#pragma once

#include <chrono>

#include "src/audit/log.h"
#include "src/process/egress.h"
#include "src/process/launcher.h"
#include "src/process/spawner.h"
#include "src/process/supervisor.h"

namespace stockade::process {

struct Runtime {
  // How often the counts of repeated audit decisions are written.
  static constexpr auto kAuditFlushInterval = std::chrono::seconds(1);

  // `spawnThread`: Spawner::Thread::kCaller when the thread that launches
  // outlives every child (a command line's main thread); `loopThread`:
  // EventLoop::Thread::kCaller when that thread also runs the supervisor's
  // loop while it waits (runForeground()).
  explicit Runtime(Spawner::Thread spawnThread = Spawner::Thread::kOwn,
                   EventLoop::Thread loopThread = EventLoop::Thread::kOwn)
      : spawner(spawnThread), supervisor(loopThread) {
    supervisor.every(kAuditFlushInterval, [&log = audit] { log.flush(); });
  }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  audit::Log audit;
  Spawner spawner;
  Egress egress{audit};
  Supervisor supervisor;
  Launcher launcher{supervisor, audit, spawner, egress};
};

}  // namespace stockade::process
