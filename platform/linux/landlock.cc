// ASYNC-SIGNAL-SAFE: applyLandlock() runs between clone and exec.
#include "platform/linux/landlock.h"

#include <sys/stat.h>

#include <cerrno>

#include "platform/linux/kernel_abi.h"
#include "platform/linux/raw_syscall.h"
#include "platform/mutation.h"

namespace stockade::platform {
namespace {

namespace abi = linux_abi;

// Write rights, by the ABI that introduced them.
std::uint64_t writeRights(int version) noexcept {
  std::uint64_t rights = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                         LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                         LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                         LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                         LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (version >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
  if (version >= 3) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
  return rights;
}

// The subset that applies to a non-directory.
constexpr std::uint64_t kFileRights = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;

}  // namespace

int landlockAbi() noexcept {
  static const int version = [] {
    int v = abi::landlockCreateRuleset(nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v < 0 ? 0 : v;
  }();
  return version;
}

bool applyLandlock(const LandlockPlan& plan, ChildError& error) noexcept {
  if (plan.abi <= 0) return true;
  using mutation::disabled, mutation::Layer;  // scripts/mutate
  const bool fs = !disabled(Layer::kLandlockFs);
  const bool net = plan.abi >= 4 && !disabled(Layer::kLandlockNet);
  abi::LandlockRulesetAttr attr;
  const std::uint64_t rights = writeRights(plan.abi);
  if (fs) attr.handledAccessFs = rights;
  // With local binding allowed, a server the program starts must be
  // reachable from the program itself on any port: neither bind nor connect
  // is restricted, and the network namespace (loopback and the proxy
  // listener only) still keeps everything outside unreachable.
  if (net && !plan.allowTcpBind)
    attr.handledAccessNet = LANDLOCK_ACCESS_NET_CONNECT_TCP | LANDLOCK_ACCESS_NET_BIND_TCP;
  if (plan.abi >= 6 && !disabled(Layer::kLandlockScopes))
    attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
  int ruleset = abi::landlockCreateRuleset(&attr, sizeof(attr), 0);
  if (ruleset < 0) {
    error.add("landlock_create_ruleset(fs=").hex(attr.handledAccessFs).add(", net=")
        .hex(attr.handledAccessNet).add(", scoped=").hex(attr.scoped).add(")");
    return error.fail(SetupStep::kLandlock);
  }
  bool ok = true;
  for (const auto& path : plan.writable) {
    if (!fs) break;
    // The rules name real paths: a symlink on the way means the tree changed
    // under the policy since it was derived, and must not redirect the grant.
    int fd = abi::openat2(AT_FDCWD, path.c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW,
                          RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      error.add("openat2(").quoted(path.c_str()).add(", O_PATH|O_NOFOLLOW, RESOLVE_NO_SYMLINKS)");
      ok = error.fail(SetupStep::kLandlock);
      break;
    }
    struct stat st;
    abi::LandlockPathBeneathAttr rule;
    rule.allowedAccess = (sys::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) ? rights : (rights & kFileRights);
    rule.parentFd = fd;
    int rc = abi::landlockAddRule(ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule);
    int saved = errno;
    sys::close(fd);
    if (rc != 0) {
      errno = saved;
      error.add("landlock_add_rule(PATH_BENEATH, ").quoted(path.c_str()).add(", ")
          .hex(rule.allowedAccess).add(")");
      ok = error.fail(SetupStep::kLandlock);
      break;
    }
  }
  if (ok && attr.handledAccessNet != 0 && plan.connectPort) {
    abi::LandlockNetPortAttr rule{LANDLOCK_ACCESS_NET_CONNECT_TCP, *plan.connectPort};
    if (abi::landlockAddRule(ruleset, LANDLOCK_RULE_NET_PORT, &rule) != 0) {
      error.add("landlock_add_rule(NET_PORT, CONNECT_TCP, port=").number(*plan.connectPort).add(")");
      ok = error.fail(SetupStep::kLandlock);
    }
  }
  if (ok && abi::landlockRestrictSelf(ruleset) != 0) {
    error.add("landlock_restrict_self()");
    ok = error.fail(SetupStep::kLandlock);
  }
  sys::close(ruleset);
  return ok;
}

}  // namespace stockade::platform
