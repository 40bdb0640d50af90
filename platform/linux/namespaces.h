// Namespaces and identity of the child: which namespaces stockade creates,
// and the child-side steps that configure them (id maps, hostname).
//
// The child maps its own uid/gid (inside == outside, one id each) after
// writing "deny" to /proc/self/setgroups: this works unprivileged and, as
// root, leaves the child holding capabilities only inside namespaces it owns.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "platform/linux/child_error.h"

namespace stockade::platform {

// CLONE_NEWUSER|NEWNS|NEWPID|NEWNET|NEWIPC|NEWUTS, plus NEWCGROUP when asked.
std::uint64_t namespaceCloneFlags(bool withCgroup) noexcept;

// True when the kernel offers cgroup namespaces (/proc/self/ns/cgroup exists).
bool cgroupNamespaceAvailable() noexcept;

// The name (comm) of every sandbox's init, pid 1 of the sandbox's pid namespace.
inline constexpr char kSandboxInitName[] = "stockade-init";
// True when this process runs inside a stockade sandbox: pid 1 of its pid
// namespace is a sandbox's init. For a clear message; not a security check.
bool insideStockadeSandbox() noexcept;

// Child side, async-signal-safe.
bool writeIdMaps(uid_t uid, gid_t gid, ChildError& error) noexcept;
bool setSandboxHostname(ChildError& error) noexcept;

}  // namespace stockade::platform
