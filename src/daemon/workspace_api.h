// The routes of shared/API.md's "Workspace" table, and files/watch: each
// decodes its request (requests.h), finds the live sandbox's workspace and
// calls the workspace library (stockade/workspace.h, checkpoint.h,
// snapshot.h), whose error codes it answers with (api_error.h).
//
// Bytes stream both ways in bounded memory: an upload or a tree import reads
// the request body (Request::rawBody: straight off the socket when its
// length is announced) on a thread of its own (a Deferred), an upload
// writing on a second one meanwhile (relay()); a download or an export is
// produced on a thread of its own (ThreadedChunks, at most 1 MiB queued for
// the client).
//
// Nothing here checks a path: the workspace resolves each one beneath its
// pinned directory and judges it by the sandbox's live rules.
#pragma once

#include <cstdint>

#include "src/daemon/sandboxes.h"
#include "src/daemon/server.h"
#include "stockade/checkpoint.h"
#include "stockade/snapshot.h"

namespace stockade::daemon {

class WorkspaceApi {
 public:
  // The stores outlive the WorkspaceApi (the Daemon owns them).
  WorkspaceApi(Sandboxes& sandboxes, CheckpointStore& checkpoints, SnapshotStore& snapshots)
      : sandboxes_(sandboxes), checkpoints_(checkpoints), snapshots_(snapshots) {}

  Reply upload(Request& r);
  Reply download(const Request& r);
  Reply remove(const Request& r);
  Reply list(const Request& r);
  Reply exists(const Request& r);
  Reply makeDir(const Request& r);
  Reply watch(const Request& r);
  Reply exportTree(const Request& r);
  Reply importTree(Request& r);
  Reply persist(const Request& r);
  Reply restore(const Request& r);
  Reply snapshot(const Request& r);
  Reply lookupSnapshot(const Request& r);

  // POST /v1/sandboxes {fromSnapshot}: the snapshot must exist (404 first);
  // the sandbox is created by `create`, then its new workspace is filled
  // from the snapshot; a snapshot that fails its checks (or names a path the
  // new sandbox's policy refuses) closes the new sandbox again.
  std::variant<SandboxView, ApiError> createFromSnapshot(const CreateSandboxRequest& request);

 private:
  Sandboxes& sandboxes_;
  CheckpointStore& checkpoints_;
  SnapshotStore& snapshots_;
};

}  // namespace stockade::daemon
