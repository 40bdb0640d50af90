// ASYNC-SIGNAL-SAFE: the assembly behind raw_syscall.h (x86_64).
#include "platform/linux/raw_syscall.h"

// vfork(2) as glibc and musl write it: the return address is popped into a
// register before the call and pushed back after it, in the child and again
// in the parent, because the child runs on this very stack until it execs and
// its own calls overwrite the slot the address was in.
asm(R"(
  .text
  .globl stockade_raw_vfork
  .hidden stockade_raw_vfork
  .type stockade_raw_vfork, @function
stockade_raw_vfork:
  pop %rdx
  mov $58, %eax
  syscall
  push %rdx
  ret
  .size stockade_raw_vfork, .-stockade_raw_vfork

  .globl stockade_raw_restore_rt
  .hidden stockade_raw_restore_rt
  .type stockade_raw_restore_rt, @function
stockade_raw_restore_rt:
  mov $15, %eax
  syscall
  .size stockade_raw_restore_rt, .-stockade_raw_restore_rt
)");

namespace stockade::platform::sys {

// rt_sigreturn(2), the return path of every handler (the assembly above).
void restoreRt() noexcept asm("stockade_raw_restore_rt");

namespace {

constexpr unsigned long kSaRestorer = 0x04000000;  // arch/x86/include/uapi/asm/signal.h

// The kernel's struct sigaction on x86_64 (arch/x86/include/uapi/asm/signal.h).
struct KernelSigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  SignalSet mask;
};

}  // namespace

int sigaction(int sig, void (*handler)(int), unsigned long flags) noexcept {
  KernelSigaction action{handler, flags | kSaRestorer, restoreRt, 0};
  return static_cast<int>(call(SYS_rt_sigaction, sig, arg(&action), 0, sizeof(SignalSet)));
}

}  // namespace stockade::platform::sys
