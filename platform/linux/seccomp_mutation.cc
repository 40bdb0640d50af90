// Only in builds with STOCKADE_MUTATION_TESTING (seccomp_mutation.h).
#include "platform/linux/seccomp_mutation.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <variant>
#include <vector>

#include "platform/linux/seccomp_compile.h"

namespace stockade::platform {

mutation::Layer seccompLayerOf(const SeccompRule& rule) noexcept {
  using L = mutation::Layer;
  struct Group {
    L layer;
    std::initializer_list<std::string_view> calls;
  };
  static const Group kGroups[] = {
      {L::kSeccompProcesses, {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"}},
      {L::kSeccompKernel, {"bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd", "kexec_load",
                           "kexec_file_load", "init_module", "finit_module", "delete_module"}},
      {L::kSeccompIoUring, {"io_uring_setup", "io_uring_enter", "io_uring_register"}},
      {L::kSeccompMountApi, {"mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig",
                             "fsmount", "fspick", "mount_setattr"}},
      {L::kSeccompNamespaces, {"setns", "unshare", "clone", "clone3"}},
      {L::kSeccompHandles, {"open_by_handle_at", "name_to_handle_at"}},
      {L::kSeccompSetId, {"chmod", "fchmod", "fchmodat", "fchmodat2", "open", "openat", "creat", "mknod", "mknodat",
                          "openat2"}},
      {L::kSeccompSockets, {"socket", "socketpair", "setsockopt"}},
      {L::kSeccompListener, {"seccomp"}},
      {L::kSeccompAllocation, {"fallocate"}},
      {L::kSeccompHostCounters, {"io_setup"}},
  };
  const std::string_view call = rule.syscall;
  // The preallocation ioctls answer EOPNOTSUPP; every other ioctl row is a terminal's.
  if (call == "ioctl") return rule.error == EOPNOTSUPP ? L::kSeccompAllocation : L::kSeccompTerminal;
  for (const auto& g : kGroups)
    for (auto c : g.calls)
      if (c == call) return g.layer;
  std::fprintf(stderr, "seccomp row \"%s\" belongs to no mutation layer: add it in platform/linux/seccomp_mutation.cc\n",
               rule.syscall);
  std::abort();
}

const SeccompProgram* mutatedSeccompProgram(const SeccompOptions& options) {
  const auto layer = mutation::gDisabled;
  if (layer < mutation::Layer::kSeccompProcesses || layer > mutation::Layer::kSeccompHostCounters) return nullptr;
  static std::mutex lock;
  static std::vector<sock_filter> filters[4];
  static SeccompProgram programs[4];
  const int index = (options.allowUnixSockets ? 1 : 0) + (options.limitFileSize ? 2 : 0);
  std::lock_guard hold(lock);
  if (filters[index].empty()) {
    auto compiled = compileSeccompFilter(options);  // seccompRules() leaves the layer's rows out
    if (auto* e = std::get_if<std::string>(&compiled)) {
      std::fprintf(stderr, "mutation testing: compiling the seccomp filter failed: %s\n", e->c_str());
      std::abort();
    }
    filters[index] = std::move(std::get<std::vector<sock_filter>>(compiled));
    programs[index] = {filters[index]};
  }
  return &programs[index];
}

}  // namespace stockade::platform
