// What the mount plan hides, for errors that say what to allow: a working
// directory or a program (or its interpreter) inside a read-denied tree
// fails with ENOENT, which alone names neither the rule nor the fix.
#pragma once

#include <string>

#include "platform/linux/child_error.h"
#include "platform/linux/mounts.h"
#include "platform/linux/spawn.h"

namespace stockade::platform {

// The mask (or "/" for the empty root) that hides `normal` (an absolute,
// lexically normal path), or "" when it shows.
std::string maskOf(const MountPlan& mounts, const std::string& normal);

// `the working directory "..." lies in the read-denied "<mask>" ...`, with the fix.
std::string hiddenCwdDetail(const std::string& cwd, const std::string& mask);

// For a failed working-directory step, or an exec step failing ENOENT,
// ENOTDIR or EACCES: what the plan hides that the step needed (the program
// found through PATH on the host, its "#!" or ELF interpreter), naming the
// mask and what to allow; "" when nothing is hidden (another cause).
std::string hiddenDetail(SetupStep step, int error, const MountPlan& mounts, const ProgramRequest& program);

}  // namespace stockade::platform
