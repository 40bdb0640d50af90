// installSeccomp() is ASYNC-SIGNAL-SAFE: it runs between clone and exec. The
// table is in seccomp_table.cc; the filter compiled from it comes from the
// build (seccomp.h).
#include "platform/linux/seccomp.h"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "platform/linux/raw_syscall.h"

namespace stockade::platform {

bool installSeccomp(const SeccompProgram& program, int& listener, bool& killableWait, ChildError& error) noexcept {
  struct sock_fprog prog;
  prog.len = static_cast<unsigned short>(program.instructions.size());
  prog.filter = const_cast<sock_filter*>(program.instructions.data());
  unsigned long flags = SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
  long fd = sys::call(SYS_seccomp, SECCOMP_SET_MODE_FILTER, static_cast<long>(flags), sys::arg(&prog));
  killableWait = fd >= 0;
  if (fd < 0 && errno == EINVAL) {  // before Linux 5.19
    flags = SECCOMP_FILTER_FLAG_NEW_LISTENER;
    fd = sys::call(SYS_seccomp, SECCOMP_SET_MODE_FILTER, static_cast<long>(flags), sys::arg(&prog));
  }
  if (fd < 0) {
    error.step = static_cast<std::int32_t>(SetupStep::kSeccomp);
    error.error = errno;
    error.add("seccomp(SECCOMP_SET_MODE_FILTER, ").add(flags == SECCOMP_FILTER_FLAG_NEW_LISTENER
                                                            ? "SECCOMP_FILTER_FLAG_NEW_LISTENER, "
                                                            : "NEW_LISTENER|WAIT_KILLABLE_RECV, ")
        .number(prog.len).add(" instructions)");
    return false;
  }
  listener = static_cast<int>(fd);
  return true;
}

}  // namespace stockade::platform
