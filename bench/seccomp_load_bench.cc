// The cost of installing stockade's seccomp filter, which every spawn's child
// pays once (the kernel checks, converts and JIT-compiles each instruction):
// each variant beside a one-instruction filter in the same run, each load in
// a fresh child, as in a spawn. Not a test. Usage: seccomp_load_bench [RUNS]
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "platform/linux/seccomp.h"

namespace {

// Microseconds one SECCOMP_SET_MODE_FILTER with a listener took in a fresh child; -1 on failure.
double loadOnce(std::span<const sock_filter> program) {
  int pipe[2];
  if (::pipe(pipe) != 0) return -1;
  pid_t child = ::fork();
  if (child == 0) {
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    sock_fprog prog{static_cast<unsigned short>(program.size()), const_cast<sock_filter*>(program.data())};
    auto start = std::chrono::steady_clock::now();
    long rc = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (rc < 0) us = -1;
    (void)!::write(pipe[1], &us, sizeof us);
    ::_exit(0);
  }
  double us = -1;
  (void)!::read(pipe[0], &us, sizeof us);
  ::waitpid(child, nullptr, 0);
  ::close(pipe[0]);
  ::close(pipe[1]);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 300;
  using stockade::platform::seccompProgram;
  static const sock_filter kAllow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct Column {
    const char* name;
    std::span<const sock_filter> program;
    std::vector<double> us;
  } columns[] = {
      {"one instruction (baseline)", kAllow, {}},
      {"stockade, unix sockets denied", seccompProgram({false, false}).instructions, {}},
      {"stockade, unix sockets allowed", seccompProgram({true, false}).instructions, {}},
      {"stockade, fileSizeBytes set", seccompProgram({false, true}).instructions, {}},
  };
  for (int i = 0; i < runs; ++i)  // interleaved, so that load changes hit every column alike
    for (auto& c : columns)
      if (double us = loadOnce(c.program); us >= 0) c.us.push_back(us);
  std::printf("%-34s %6s %10s %10s\n", "filter", "insns", "median us", "p10 us");
  double base = 0;
  for (auto& c : columns) {
    if (c.us.empty()) {
      std::printf("%-34s %6zu    (every load failed)\n", c.name, c.program.size());
      continue;
    }
    std::sort(c.us.begin(), c.us.end());
    const double median = c.us[c.us.size() / 2], p10 = c.us[c.us.size() / 10];
    if (base == 0) base = median;
    std::printf("%-34s %6zu %10.1f %10.1f   %+.1f us over the baseline\n", c.name, c.program.size(), median, p10,
                median - base);
  }
}
