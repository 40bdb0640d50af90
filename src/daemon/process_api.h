// The routes of shared/API.md's "Processes" table, sessions and PTYs: each
// decodes its request (requests.h), finds the live sandbox, calls its
// process service, and writes every start to the ledger before dispatching
// it (under its processKey, one the daemon makes when the client gives
// none), with the process's identity once spawned.
#pragma once

#include <cstddef>

#include <functional>
#include <string_view>

#include "src/daemon/requests.h"
#include "src/daemon/sandboxes.h"
#include "src/daemon/server.h"

namespace stockade::daemon {

class ProcessApi {
 public:
  ProcessApi(Sandboxes& sandboxes, ledger::Ledger& ledger) : sandboxes_(sandboxes), ledger_(ledger) {}

  Reply start(const Request& r);
  Reply run(const Request& r);
  Reply list(const Request& r);
  Reply get(const Request& r);
  Reply logs(const Request& r);
  Reply stream(const Request& r);
  Reply wait(const Request& r);
  Reply kill(const Request& r);
  Reply stdinWrite(const Request& r);
  Reply remove(const Request& r);
  Reply terminate(const Request& r);
  Reply createSession(const Request& r);
  Reply getSession(const Request& r);
  Reply sessionRun(const Request& r);
  Reply sessionStart(const Request& r);
  Reply deleteSession(const Request& r);
  Reply startPty(const Request& r);
  Reply attachPty(const Request& r);
  Reply resizePty(const Request& r);
  Reply runCode(const Request& r);

 private:
  Reply startCommand(const Request& r, Decoded<StartProcessRequest> decoded, bool wait);
  Reply sessionCommand(const Request& r, Decoded<SessionCommandRequest> decoded, bool wait);
  ProcessStatus recordedStop(const ProcessDto& dto, std::string_view op, std::string_view detail,
                             const std::function<ProcessStatus()>& stop);

  Sandboxes& sandboxes_;
  ledger::Ledger& ledger_;
};

}  // namespace stockade::daemon
