// Importing a tar archive into the workspace. libarchive parses the format
// (tar only: ustar, pax, GNU; no compression); import_policy.h decides every
// entry; this file creates what it admits, beneath a staging directory on
// the workspace's filesystem (the workspace's parent when it is on the same
// mount, so the sandbox never sees it; else a hidden directory in the
// workspace), and only once the whole archive has been read and checked moves
// it into place:
//   kMerge    each staged name is renamed into the destination (RENAME_NOREPLACE),
//             or swapped with the file already there (RENAME_EXCHANGE);
//             directories that exist are merged into. Every step is
//             journaled: a failure part way (an existing directory where the
//             archive has a file, a race with the sandbox) undoes them all.
//   kReplace  the staged tree is swapped with the destination directory as a
//             whole (restore: "the target directory is replaced").
// Either way a refused archive, a failed check or a timeout leaves the
// destination exactly as it was.
//
// Strictness beyond libarchive's own: any warning is a refusal (a bad pax
// record, a name that cannot be decoded), the archive must end with its two
// zero blocks (libarchive accepts an archive cut at an entry boundary), and
// only zero padding may follow them.
#pragma once

#include <functional>

#include "src/workspace/import_policy.h"
#include "src/workspace/workspace_impl.h"

namespace stockade::workspace {

enum class Placement { kMerge, kReplace };

struct ImportPlan {
  SymlinkTargets symlinks = SymlinkTargets::kBeneathDestination;
  Placement placement = Placement::kMerge;
  // Called once everything is staged, before anything is placed: an error
  // stops the import with nothing changed (restore checks size and sha256).
  std::function<WorkspaceStatus()> beforePlacement;
  Deadline deadline = Deadline::max();  // timeout beyond it
};

// `dest` is created (with its parents) when missing, only once the archive
// passed. kReplace needs a non-root `dest`.
WorkspaceStatus importTreeAt(const Workspace::Impl& ws, ByteSource& tar, const SandboxPath& dest,
                             const ImportPlan& plan);

}  // namespace stockade::workspace
