// installSeccomp() is ASYNC-SIGNAL-SAFE: it runs between clone and exec. The
// table is in seccomp_table.cc; the filter compiled from it comes from the
// build (seccomp.h).
#include "platform/linux/seccomp.h"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace stockade::platform {

bool installSeccomp(const SeccompProgram& program, int& listener, ChildError& error) noexcept {
  struct sock_fprog prog;
  prog.len = static_cast<unsigned short>(program.instructions.size());
  prog.filter = const_cast<sock_filter*>(program.instructions.data());
  long fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  if (fd < 0) {
    error.step = static_cast<std::int32_t>(SetupStep::kSeccomp);
    error.error = errno;
    error.add("seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, ").number(prog.len).add(" instructions)");
    return false;
  }
  listener = static_cast<int>(fd);
  return true;
}

}  // namespace stockade::platform
