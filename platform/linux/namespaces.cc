// ASYNC-SIGNAL-SAFE: writeIdMaps() and setSandboxHostname() run between
// clone and exec.
#include "platform/linux/namespaces.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "platform/linux/kernel_abi.h"
#include "platform/linux/raw_syscall.h"
#include "platform/mutation.h"

namespace stockade::platform {
namespace {

bool writeFile(const char* path, const char* text, ChildError& error) noexcept {
  int fd = sys::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    error.step = static_cast<std::int32_t>(SetupStep::kIdMaps);
    error.error = errno;
    error.add("open(").quoted(path).add(", O_WRONLY)");
    return false;
  }
  const std::size_t len = sys::length(text);
  ssize_t n = sys::write(fd, text, len);
  int saved = errno;
  sys::close(fd);
  if (n != static_cast<ssize_t>(len)) {
    error.step = static_cast<std::int32_t>(SetupStep::kIdMaps);
    error.error = n < 0 ? saved : EIO;
    error.add("write(").quoted(path).add(", ").quoted(text).add(")");
    return false;
  }
  return true;
}

}  // namespace

std::uint64_t namespaceCloneFlags(bool withCgroup) noexcept {
  std::uint64_t flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
  if (withCgroup) flags |= CLONE_NEWCGROUP;
  using mutation::disabled, mutation::Layer;  // scripts/mutate
  for (auto [layer, flag] : {std::pair{Layer::kUserNamespace, CLONE_NEWUSER}, {Layer::kMountNamespace, CLONE_NEWNS},
                             {Layer::kPidNamespace, CLONE_NEWPID}, {Layer::kNetworkNamespace, CLONE_NEWNET},
                             {Layer::kIpcNamespace, CLONE_NEWIPC}, {Layer::kUtsNamespace, CLONE_NEWUTS},
                             {Layer::kCgroupNamespace, CLONE_NEWCGROUP}})
    if (disabled(layer)) flags &= ~static_cast<std::uint64_t>(flag);
  return flags;
}

bool cgroupNamespaceAvailable() noexcept { return ::access("/proc/self/ns/cgroup", F_OK) == 0; }

bool insideStockadeSandbox() noexcept {
  int fd = ::open("/proc/1/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char comm[32] = {};
  ssize_t n = ::read(fd, comm, sizeof comm - 1);
  ::close(fd);
  constexpr std::size_t kLength = sizeof kSandboxInitName - 1;
  return n == static_cast<ssize_t>(kLength + 1) && std::memcmp(comm, kSandboxInitName, kLength) == 0 &&
         comm[kLength] == '\n';
}

bool writeIdMaps(uid_t uid, gid_t gid, ChildError& error) noexcept {
  ChildError line;
  line.number(uid).add(" ").number(uid).add(" 1\n");
  if (!writeFile("/proc/self/uid_map", line.call, error)) return false;
  if (!writeFile("/proc/self/setgroups", "deny", error)) return false;
  line.clear();
  line.number(gid).add(" ").number(gid).add(" 1\n");
  return writeFile("/proc/self/gid_map", line.call, error);
}

bool setSandboxHostname(ChildError& error) noexcept {
  static constexpr char kName[] = "stockade";
  if (sys::sethostname(kName, sizeof(kName) - 1) != 0) {
    error.step = static_cast<std::int32_t>(SetupStep::kHostname);
    error.error = errno;
    error.add("sethostname(\"stockade\")");
    return false;
  }
  return true;
}

}  // namespace stockade::platform
