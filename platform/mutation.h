// Mutation testing of the enforcement layers (scripts/mutate). A build
// configured with -DSTOCKADE_MUTATION_TESTING=ON compiles in one switch: the
// environment variable STOCKADE_MUTATE, read once at start-up, names one
// layer to leave out, and the suites run against that build must then fail.
// Without the option (every production build) disabled() is a constant false:
// the branches it guards compile away, and neither the variable's name nor
// the layer names are in the binary (ctest production_build_has_no_mutation_switch).
//
// Kernel-free and header-only: the proxy's decision and the launcher's
// environment filter use it as well as platform/. Asking the switch is a
// load of a global, async-signal-safe, so the child path may ask it too.
#pragma once

#ifdef STOCKADE_MUTATION_TESTING
#include <cstdio>
#include <cstdlib>
#include <cstring>
#endif

namespace stockade::mutation {

// One entry per layer, in the order scripts/mutate runs them; kNames below
// holds the name STOCKADE_MUTATE takes for each.
enum class Layer : int {
  kNone = 0,
  // mounts.cc
  kReadMasks,          // the masks over read denies
  kProcReadOnly,       // /proc/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus read-only (every kReadOnly op)
  kBrokeredReadOnly,   // the brokered (write-allowed) trees bound read-only: writes only through the broker
  kReadOnlyRoot,       // the host tree mounted read-only
  kEmptyRoot,          // denyRead "/": an empty root with the carve-outs (the host's tree instead)
  // landlock.cc
  kLandlockFs,         // write rights only beneath the writable paths
  kLandlockNet,        // TCP connect only to the proxy port, bind only with allowLocalBinding
  kLandlockScopes,     // abstract unix sockets and signals scoped to the sandbox
  // seccomp_table.cc: the table's rows by what they protect (seccomp_mutation.cc)
  kSeccompProcesses,   // ptrace, process_vm_*, pidfd_getfd
  kSeccompKernel,      // bpf, perf_event_open, keyrings, userfaultfd, kexec, modules
  kSeccompIoUring,     // io_uring_*
  kSeccompMountApi,    // mount, umount2, pivot_root, open_tree, move_mount, fs*, mount_setattr
  kSeccompNamespaces,  // setns, unshare and clone with namespace flags, clone3
  kSeccompHandles,     // open_by_handle_at, name_to_handle_at
  kSeccompTerminal,    // the terminal and console ioctls
  kSeccompSetId,       // setuid/setgid mode bits, openat2
  kSeccompSockets,     // socket() and socketpair() outside the allow-list
  kSeccompListener,    // a seccomp listener of the program's own
  kSeccompAllocation,  // fallocate and the preallocation ioctls under limits.fileSizeBytes
  kSeccompHostCounters,  // calls that take from a count the whole host shares (io_setup)
  // namespaces.cc, spawn.cc (with the setup steps that need the namespace)
  kUserNamespace,
  kMountNamespace,     // and with it the whole mount layer, which would otherwise change the host's mounts
  kPidNamespace,
  kNetworkNamespace,
  kIpcNamespace,
  kUtsNamespace,
  kCgroupNamespace,
  // privileges.cc
  kCapabilities,       // the capability drop and no_new_privs (seccomp and Landlock need one of the two)
  // src/child_env.cc, spawn.cc, proxy/decision.cc
  kEnvironmentFilter,  // the child gets the host's whole environment
  kFdClosing,          // the child keeps the supervisor's inherited fds
  kProxyDecision,      // the proxy allows every destination
  kWriteBroker,        // the write broker's decision: it performs what the rules refuse (write_broker.cc)
  kCount,
};

#ifdef STOCKADE_MUTATION_TESTING

inline constexpr const char* kNames[] = {
    "none", "read-masks", "proc-read-only", "brokered-read-only", "read-only-root",
    "empty-root", "landlock-fs", "landlock-net", "landlock-scopes", "seccomp-processes", "seccomp-kernel",
    "seccomp-io-uring", "seccomp-mount-api", "seccomp-namespaces", "seccomp-handles", "seccomp-terminal",
    "seccomp-setid", "seccomp-sockets", "seccomp-listener", "seccomp-allocation", "seccomp-host-counters",
    "user-namespace", "mount-namespace", "pid-namespace", "network-namespace", "ipc-namespace", "uts-namespace",
    "cgroup-namespace", "capabilities", "environment-filter", "fd-closing", "proxy-decision", "write-broker",
};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<int>(Layer::kCount));

// The layer STOCKADE_MUTATE names, read before main(); an unknown name stops
// the process there rather than run with nothing left out.
inline Layer readSwitch() noexcept {
  const char* name = std::getenv("STOCKADE_MUTATE");
  if (name == nullptr || *name == '\0') return Layer::kNone;
  for (int i = 0; i < static_cast<int>(Layer::kCount); ++i)
    if (std::strcmp(name, kNames[i]) == 0) return static_cast<Layer>(i);
  std::fprintf(stderr, "STOCKADE_MUTATE=%s: no such layer (scripts/mutate --list names them)\n", name);
  std::abort();
}
inline const Layer gDisabled = readSwitch();

// static: an object built without the switch has its own disabled(), never this one.
static inline bool disabled(Layer layer) noexcept { return gDisabled == layer; }

#else

static constexpr bool disabled(Layer) noexcept { return false; }

#endif

}  // namespace stockade::mutation
