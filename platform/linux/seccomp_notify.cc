#include "platform/linux/seccomp_notify.h"

#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "platform/linux/allocation_limit.h"
#include "platform/linux/seccomp.h"

namespace stockade::platform {
namespace {

// The kernel's sizes, which may exceed these headers' (6.1).
const seccomp_notif_sizes& sizes() {
  static const seccomp_notif_sizes s = [] {
    seccomp_notif_sizes k{};
    if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &k) != 0) k = {};
    k.seccomp_notif = std::max<std::uint16_t>(k.seccomp_notif, sizeof(seccomp_notif));
    k.seccomp_notif_resp = std::max<std::uint16_t>(k.seccomp_notif_resp, sizeof(seccomp_notif_resp));
    return k;
  }();
  return s;
}

}  // namespace

std::variant<std::optional<SeccompDenial>, std::string> answerDenial(int listener, const NotificationRules& rules) {
  std::vector<unsigned char> request(sizes().seccomp_notif, 0);
  auto* notif = reinterpret_cast<seccomp_notif*>(request.data());
  while (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, notif) != 0) {
    if (errno == EINTR) continue;
    if (errno == ENOENT) return std::optional<SeccompDenial>();  // the caller died, or was interrupted
    return std::string("ioctl(seccomp listener, SECCOMP_IOCTL_NOTIF_RECV) failed: ") + strerrorname_np(errno);
  }
  SeccompDenial denial;
  denial.pid = static_cast<pid_t>(notif->pid);
  const char* name = seccompSyscallName(notif->data.nr);
  denial.syscall = name ? name : "syscall " + std::to_string(notif->data.nr);
  std::copy(std::begin(notif->data.args), std::end(notif->data.args), denial.args.begin());

  // Only fallocate() is decided: the filter hands it over only under
  // limits.fileSizeBytes (a 0 limit here, which cannot happen, refuses it).
  bool allow = false;
  if (notif->data.nr == SYS_fallocate) {
    const auto verdict = rules.fileSizeBytes == 0 ? AllocationVerdict{false, EPERM}
                                                  : decideFallocate(notif->data.args[1], notif->data.args[2],
                                                                    notif->data.args[3], rules.fileSizeBytes);
    allow = verdict.allowed;
    denial.error = verdict.error;
  }

  std::vector<unsigned char> answer(sizes().seccomp_notif_resp, 0);
  auto* resp = reinterpret_cast<seccomp_notif_resp*>(answer.data());
  resp->id = notif->id;
  resp->error = allow ? 0 : -denial.error;
  resp->val = 0;
  resp->flags = allow ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0;
  while (::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) != 0) {
    if (errno == EINTR) continue;
    if (errno == ENOENT) break;  // the caller died or its call was interrupted meanwhile: still a denial
    return std::string("ioctl(seccomp listener, SECCOMP_IOCTL_NOTIF_SEND) failed: ") + strerrorname_np(errno);
  }
  if (allow) return std::optional<SeccompDenial>();
  return std::optional<SeccompDenial>(std::move(denial));
}

}  // namespace stockade::platform
