#include "platform/linux/features.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "platform/linux/landlock.h"
#include "platform/unique_fd.h"

namespace stockade::platform {

namespace {

// The first 4 KiB of a /proc file, "" when it cannot be read.
void readSmall(const char* path, char (&buf)[4096]) {
  buf[0] = '\0';
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return;
  ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = '\0';
}

bool hasWord(const char* text, const char* word) {
  std::size_t len = std::strlen(word);
  for (const char* p = std::strstr(text, word); p; p = std::strstr(p + 1, word)) {
    bool startOk = p == text || p[-1] == ' ' || p[-1] == '\n';
    char after = p[len];
    if (startOk && (after == ' ' || after == '\n' || after == '\0')) return true;
  }
  return false;
}

bool canCreateUserNamespace() {
  pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) _exit(::unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

KernelFeatures detectKernelFeatures() noexcept {
  KernelFeatures f;
  f.landlockAbi = landlockAbi();
  // PR_GET_SECCOMP fails with EINVAL when the kernel lacks seccomp.
  f.seccompFilter = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  char actions[4096];
  readSmall("/proc/sys/kernel/seccomp/actions_avail", actions);
  f.seccompUserNotif = f.seccompFilter && hasWord(actions, "user_notif");
  f.userNamespaces = canCreateUserNamespace();
  return f;
}

bool kernelAtLeast(int major, int minor) noexcept {
  static const std::pair<int, int> version = [] {
    utsname u{};
    int a = 0, b = 0;
    if (::uname(&u) == 0) std::sscanf(u.release, "%d.%d", &a, &b);
    return std::pair<int, int>(a, b);
  }();
  return version >= std::pair<int, int>(major, minor);
}

}  // namespace stockade::platform
