// Exporting a directory tree of the workspace as a tar stream (TreeExport):
// a TreeWalker over fds (no symlink followed), each entry judged by the
// access rules (read-denied ones are left out), encoded by tar_format.h,
// file data read straight into the caller's buffer.
#pragma once

#include <string>
#include <vector>

#include "src/workspace/workspace_impl.h"

namespace stockade::workspace {

struct ExportOptions {
  // Directories with one of these names, at any depth, are left out with
  // everything beneath them (persist's excludes). Not counted as omitted.
  std::vector<std::string> excludeDirectoryNames;
};

// The tree at `path` (a directory). permission_denied when it is read-denied.
WorkspaceResult<TreeExport> exportTreeAt(const Workspace::Impl& ws, const SandboxPath& path,
                                         const ExportOptions& options);

}  // namespace stockade::workspace
