// The write broker: the supervisor's half of every write-shaped call a
// sandboxed program makes (the brokered calls of seccomp_table.cc).
//
// The child holds no write right of its own inside a writable tree: the mount
// layer binds each tree read-only into the sandbox, and Landlock grants the
// child nothing there. A brokered call arrives here as a seccomp notification
// (seccomp_notify.h, answerNotification()); the broker
//   1. reads the path arguments once from the child's memory (checking after
//      every read that the call is still the one it was: SECCOMP_IOCTL_NOTIF_
//      ID_VALID), and never lets the kernel read them again for a call it
//      performs;
//   2. resolves each name in the child's view of the filesystem (its root,
//      its cwd or dirfd, symlinks followed as the call would follow them,
//      RESOLVE_IN_ROOT so nothing resolves outside it);
//   3. when the name lies in a writable tree, opens its parent directory on
//      the host side, beneath the tree's own descriptor (the object the mount
//      layer bound), without following symlinks;
//   4. asks the pure decision (policy/write_decision.h) -- operation, resolved
//      names, rules -> verdict with the rule's name;
//   5. performs the permitted call relative to that pinned parent, with the
//      child's umask and without any capability, and answers with the result
//      or the new descriptor (SECCOMP_IOCTL_NOTIF_ADDFD + SECCOMP_ADDFD_FLAG_
//      SEND installs it and answers in one step).
// A call that touches no writable tree, or that the broker cannot resolve,
// continues in the kernel under the child's own rights: whatever the child
// changes in its memory meanwhile can only reach what those rights reach,
// which excludes every writable tree. If the supervisor is gone, the kernel
// fails every trapped call (ENOSYS).
//
// Thread-safety: a WriteBroker is immutable once its root is attached;
// answering may happen on any thread, one notification at a time per sandbox.
// Each call does a bounded amount of work and never blocks on the child
// (a FIFO or device is opened non-blocking), so one loop can serve many
// sandboxes.
#pragma once

#include <linux/seccomp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "platform/linux/mounts.h"
#include "platform/linux/seccomp.h"
#include "platform/linux/seccomp_notify.h"
#include "platform/linux/socket_limits.h"
#include "platform/unique_fd.h"
#include "policy/write_decision.h"
#include "stockade/rules.h"

namespace stockade::platform {

class WriteBroker {
 public:
  // Parent side, before clone (allocates): the rules' write part, compiled
  // for the trees the mount plan brokers (sandbox_plan.h: SandboxPlan::
  // writeRules, which the coverage check asks), and every brokered tree
  // opened (O_PATH, no symlink followed) -- the objects the mount layer
  // binds read-only into the sandbox, so the broker writes where the child
  // looks. `workspace`: the sandbox shows it at /workspace too; a name the
  // child gives beneath /workspace is decided and written as the workspace's
  // host path. Errors name the call.
  static std::variant<std::shared_ptr<WriteBroker>, std::string> open(const DerivedRules& rules,
                                                                       policy::WriteRules writeRules,
                                                                       const SeccompOptions& options,
                                                                       WorkspaceMount workspace = {});

  // The brokered trees (MountPlan::brokeredTrees()) and their descriptors,
  // aligned; -1 for a tree that does not exist on the host.
  const std::vector<std::string>& trees() const noexcept { return rules_.trees(); }
  std::vector<int> treeFds() const;
  // The decision it makes (the coverage check asks it).
  const policy::WriteRules& writeRules() const noexcept { return rules_; }

  // The sandbox's root directory, sent by the child once its mounts are
  // built. Until then every brokered call is refused (EPERM).
  void attachRoot(UniqueFd root) { root_ = std::move(root); }

  // The limit on file sizes the program runs under (limits.fileSizeBytes; 0:
  // none): truncate() by name is performed here, outside its RLIMIT_FSIZE.
  std::uint64_t fileSizeLimit() const noexcept { return fileSizeLimit_; }

  // How to answer one call the kernel handed over (seccomp_notify.cc).
  struct Answer {
    enum class Kind { kContinue, kValue, kError, kFd, kGone } kind = Kind::kGone;
    long long value = 0;
    int error = 0;
    UniqueFd fd;          // kFd: installed in the child and returned as the call's result
    bool cloexec = false; // kFd: O_CLOEXEC on the child's descriptor
    std::optional<SeccompDenial> denial;  // set when a rule refused it: to be audited
  };
  Answer answer(int listener, const seccomp_notif& notification) const;

  // For a thread that does nothing but answer listeners from now on (the
  // supervisor's answerer): its effective capabilities are dropped for good
  // and a child's umask stays set between calls, so a brokered call no
  // longer switches both back and forth (two capset() and two umask() calls
  // each, of the 16 a create made).
  static void dedicateThisThread() noexcept;

 private:
  WriteBroker(const DerivedRules& rules, policy::WriteRules writeRules, const SeccompOptions& options);
  friend class BrokeredCallHandler;

  policy::WriteRules rules_;
  WorkspaceMount workspace_;
  std::vector<UniqueFd> treeFds_;
  std::vector<std::uint64_t> hostMounts_;  // the mounts the trees' descriptors are on (the broker's side)
  // The umask every program in the sandbox has until one calls umask(2).
  mutable std::atomic<int> startUmask_{-1};
  mutable std::atomic<bool> umaskChanged_{false};
  // The thread that called umask(2) last and what it set (the argument, as
  // the kernel takes it), known for that thread while its pidfd says it
  // lives: its tid names no other task meanwhile. Any other caller's umask
  // (a thread sharing its fs, a child it forked) is read from /proc. Saves
  // tar -- which calls umask(2) once -- a /proc read per file it creates.
  struct UmaskSetter {
    pid_t tid = 0;
    UniqueFd pidfd;
    mode_t mask = 0;
  };
  mutable std::mutex umaskLock_;
  mutable UmaskSetter umaskSetter_;
  UniqueFd root_;
  std::uint64_t fileSizeLimit_ = 0;
  // The sandbox's netlink sockets, counted (socket_limits.h).
  mutable NetlinkSocketGate netlink_;
  // Per syscall number: the EPERM rows of the table (answered EPERM before
  // anything is brokered), and the brokered call. The same for every broker
  // with the same seccomp options: built once per process, when the first
  // notification of any broker with those options is answered -- not on the
  // spawn path, where building them took ~0.1 ms of every `stockade run`
  // (most programs a command line runs make no trapped call at all).
  struct Rows {
    std::vector<SeccompRule> denials;
    const BrokeredCall* brokered = nullptr;
  };
  using RowTable = std::unordered_map<int, Rows>;
  static const RowTable& rowsFor(const SeccompOptions& options);
  template <bool kAllowUnixSockets, bool kLimitFileSize>
  static const RowTable& rowTable();
  SeccompOptions options_;
};

}  // namespace stockade::platform
