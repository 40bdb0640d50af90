// Mounts a test may make without touching the host's mount table: `body`
// runs in a forked child with a mount namespace of its own (and, when not
// root, a user namespace mapping the caller's ids, so this works as the
// unprivileged user too), and the text it returns comes back.
// "SETUP: ..." when the namespaces could not be made (or the child died).
#pragma once

#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>
#include <utility>

namespace stockade::testing {

// A tmpfs a test mounts on the host itself (root only), detached when the
// test's scope ends however it ends: a failed ASSERT between mount and
// umount left it in the host's mount table, where every later sandbox saw it.
class HostTmpfs {
 public:
  explicit HostTmpfs(std::string path) : path_(std::move(path)) {
    mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, "size=64k") == 0;
  }
  ~HostTmpfs() { detach(); }
  HostTmpfs(const HostTmpfs&) = delete;
  HostTmpfs& operator=(const HostTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  // The test's own unmount; true when it worked.
  bool detach() {
    if (!mounted_) return true;
    mounted_ = ::umount2(path_.c_str(), MNT_DETACH) != 0;
    return !mounted_;
  }

 private:
  std::string path_;
  bool mounted_ = false;
};

inline std::string inPrivateMounts(const std::function<std::string()>& body) {
  int report[2];
  if (::pipe(report) != 0) return "SETUP: pipe";
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  const pid_t pid = ::fork();
  if (pid < 0) return "SETUP: fork";
  if (pid == 0) {
    ::close(report[0]);
    auto say = [&](const std::string& text) {
      (void)!::write(report[1], text.data(), text.size());
      ::_exit(0);
    };
    if (::unshare(uid == 0 ? CLONE_NEWNS : CLONE_NEWUSER | CLONE_NEWNS) != 0) say("SETUP: unshare");
    if (uid != 0) {
      std::ofstream("/proc/self/setgroups") << "deny";
      std::ofstream("/proc/self/uid_map") << uid << " " << uid << " 1";
      std::ofstream("/proc/self/gid_map") << gid << " " << gid << " 1";
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) say("SETUP: mount private");
    say(body());
  }
  ::close(report[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(report[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(report[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "SETUP: the child did not exit cleanly: " + out;
  return out;
}

}  // namespace stockade::testing
