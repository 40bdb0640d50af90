#include "platform/linux/seccomp_notify.h"

#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "platform/linux/kernel_abi.h"
#include "platform/linux/write_broker.h"

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

std::string failed(const char* ioctl) {
  return std::string("ioctl(seccomp listener, ") + ioctl + ") failed: " + strerrorname_np(errno);
}

}  // namespace

bool preferSynchronousWakeUp(int listener) noexcept {
  std::uint64_t flags = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags) == 0;
}

std::variant<std::optional<SeccompDenial>, std::string> answerNotification(int listener, const WriteBroker& broker,
                                                                           bool* received) {
  if (received) *received = false;
  std::vector<unsigned char> request(sizes().seccomp_notif, 0);
  auto* notif = reinterpret_cast<seccomp_notif*>(request.data());
  while (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, notif) != 0) {
    if (errno == EINTR) continue;
    if (errno == ENOENT) return std::optional<SeccompDenial>();  // the caller died, or was interrupted
    return failed("SECCOMP_IOCTL_NOTIF_RECV");
  }
  if (received) *received = true;
  WriteBroker::Answer answer = broker.answer(listener, *notif);
  if (answer.kind == WriteBroker::Answer::Kind::kGone) return std::optional<SeccompDenial>();
  if (answer.denial && answer.denial->error == 0) answer.denial->error = answer.error;

  if (answer.kind == WriteBroker::Answer::Kind::kFd) {
    // Installed in the caller and returned as its result, in one step.
    seccomp_notif_addfd addfd{};
    addfd.id = notif->id;
    addfd.flags = SECCOMP_ADDFD_FLAG_SEND;
    addfd.srcfd = static_cast<std::uint32_t>(answer.fd.get());
    addfd.newfd_flags = answer.cloexec ? O_CLOEXEC : 0;
    while (::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd) < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOENT) break;  // the caller died meanwhile; our descriptor closes here
      if (errno == EMFILE) {       // the caller's descriptor table is full: its own error
        answer.kind = WriteBroker::Answer::Kind::kError;
        answer.error = EMFILE;
        break;
      }
      return failed("SECCOMP_IOCTL_NOTIF_ADDFD");
    }
    if (answer.kind == WriteBroker::Answer::Kind::kFd) return std::move(answer.denial);
  }
  std::vector<unsigned char> reply(sizes().seccomp_notif_resp, 0);
  auto* resp = reinterpret_cast<seccomp_notif_resp*>(reply.data());
  resp->id = notif->id;
  switch (answer.kind) {
    case WriteBroker::Answer::Kind::kContinue: resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE; break;
    case WriteBroker::Answer::Kind::kValue: resp->val = answer.value; break;
    default: resp->error = -answer.error; break;
  }
  while (::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) != 0) {
    if (errno == EINTR) continue;
    if (errno == ENOENT) break;  // the caller died or its call was interrupted meanwhile
    return failed("SECCOMP_IOCTL_NOTIF_SEND");
  }
  return std::move(answer.denial);
}

}  // namespace stockade::platform
