// The daemon's routes, implemented: a Handler that decodes each request
// (requests.h), does what the route says and encodes the reply. One member
// function per route; the dispatch is a switch over the route table's ids.
#pragma once

#include <memory>
#include <string>

#include "platform/linux/features.h"
#include "src/daemon/process_api.h"
#include "src/daemon/sandboxes.h"
#include "src/daemon/server.h"
#include "src/daemon/workspace_api.h"

namespace stockade::daemon {

struct ApiContext {
  platform::KernelFeatures features;  // detected once at start-up
  Sandboxes* sandboxes = nullptr;     // owned by the Daemon, outlives the Api
  ledger::Ledger* ledger = nullptr;   // the same
  CheckpointStore* checkpoints = nullptr;  // the same
  SnapshotStore* snapshots = nullptr;      // the same
};

class Api : public Handler {
 public:
  explicit Api(ApiContext context);
  Reply handle(Request& request) override;

 private:
  Reply health(const Request& r);
  Reply createSandbox(const Request& r);
  Reply listSandboxes(const Request& r);
  Reply getSandbox(const Request& r);
  Reply narrowSandbox(const Request& r);
  Reply deleteSandbox(const Request& r);

  ApiContext context_;
  ProcessApi processes_;
  WorkspaceApi workspaces_;
};

}  // namespace stockade::daemon
