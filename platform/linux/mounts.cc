// ASYNC-SIGNAL-SAFE from applyMounts() down: this code runs between clone and
// exec. No allocation, no stdio, no locks; only syscalls and stack buffers.
// planMounts() is the exception: it runs in the parent.
#include "platform/linux/mounts.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "platform/linux/kernel_abi.h"
#include "policy/paths.h"
#include "policy/write_decision.h"

namespace stockade::platform {
namespace {

namespace abi = linux_abi;

constexpr const char* kStage = "/tmp";             // private tmpfs in the child's namespace
constexpr const char* kNewRoot = "/tmp/root";      // the child's future "/"
constexpr const char* kEmptyFile = "/tmp/empty";   // source of file masks
// Mount data of the tmpfs mounts that hold only empty files and directories
// (mounts.h); the private /tmp and /dev/shm use MountPlan::tmpOptions.
constexpr const char* kSmallTmpfs = "mode=0755,size=4k";
constexpr const char* kStageTmpfs = "mode=0700,size=4k";

bool beneath(const std::string& path, const std::string& root) { return policy::isWithin(path, root); }

bool beneathAny(const std::string& path, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const std::string& r) { return beneath(path, r); });
}


// --- child side: everything below is async-signal-safe -------------------

// "/proc/self/fd/<fd>" into `out`.
void fdPath(int fd, char (&out)[40]) noexcept {
  ChildError scratch;
  scratch.add("/proc/self/fd/").number(fd);
  std::memcpy(out, scratch.call, sizeof(out) - 1);
  out[sizeof(out) - 1] = '\0';
}

struct Fd {  // a tiny owner usable in the child (UniqueFd is fine too, but keep it local)
  int fd = -1;
  explicit Fd(int f) noexcept : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Resolves `path` (absolute, sandbox view) inside the new root without
// following any symlink. Returns an O_PATH fd or -1 with errno.
int resolve(int rootFd, const char* path) noexcept {
  while (*path == '/') ++path;
  if (*path == '\0') return static_cast<int>(::fcntl(rootFd, F_DUPFD_CLOEXEC, 0));
  return abi::openat2(rootFd, path, O_PATH | O_CLOEXEC | O_NOFOLLOW,
                      RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

// As resolve(), creating missing components (directories, and the last one as
// a directory or an empty file). Creation only succeeds on the private tmpfs
// mounts (the host tree is read-only), so nothing is ever created on the host.
int ensure(int rootFd, const char* path, bool lastIsDir, ChildError& error) noexcept {
  int fd = resolve(rootFd, path);
  if (fd >= 0 || errno != ENOENT) {
    if (fd < 0) error.add("openat2(newroot, ").quoted(path).add(", RESOLVE_NO_SYMLINKS)");
    return fd;
  }
  char component[4096];
  int dir = static_cast<int>(::fcntl(rootFd, F_DUPFD_CLOEXEC, 0));
  const char* p = path;
  while (*p == '/') ++p;
  while (*p != '\0' && dir >= 0) {
    std::size_t n = 0;
    while (p[n] != '\0' && p[n] != '/' && n + 1 < sizeof(component)) {
      component[n] = p[n];
      ++n;
    }
    component[n] = '\0';
    p += n;
    while (*p == '/') ++p;
    const bool last = *p == '\0';
    int next = abi::openat2(dir, component, O_PATH | O_CLOEXEC | O_NOFOLLOW,
                            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (next < 0 && errno == ENOENT) {
      if (!last || lastIsDir) {
        if (::mkdirat(dir, component, 0755) != 0 && errno != EEXIST) {
          error.add("mkdirat(").quoted(path).add(" component ").quoted(component).add(", 0755)");
          ::close(dir);
          return -1;
        }
      } else {
        int f = ::openat(dir, component, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (f < 0) {
          error.add("openat(").quoted(path).add(", O_CREAT|O_EXCL, 0444)");
          ::close(dir);
          return -1;
        }
        ::close(f);
      }
      next = abi::openat2(dir, component, O_PATH | O_CLOEXEC | O_NOFOLLOW,
                          RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    }
    if (next < 0) {
      error.add("openat2(newroot, ").quoted(path).add(" component ").quoted(component)
          .add(", RESOLVE_NO_SYMLINKS)");
      ::close(dir);
      return -1;
    }
    ::close(dir);
    dir = next;
  }
  return dir;
}

bool setAttr(int fd, const char* what, std::uint64_t attrs, bool recursive, ChildError& error) noexcept {
  abi::MountAttr attr;
  attr.attrSet = attrs;
  unsigned flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0u);
  if (abi::mountSetattr(fd, "", flags, &attr) != 0) {
    error.add("mount_setattr(").quoted(what).add(", ").add(recursive ? "AT_RECURSIVE, " : "")
        .add("set=").hex(attrs).add(")");
    return error.fail(SetupStep::kMounts);
  }
  return true;
}

// A detached recursive copy of the host tree at `path`, with `attrs` set.
// Returns -1 with errno ENOENT (error untouched) when the path does not exist.
int cloneHostTree(const char* path, std::uint64_t attrs, ChildError& error) noexcept {
  Fd src(abi::openat2(AT_FDCWD, path, O_PATH | O_CLOEXEC | O_NOFOLLOW,
                      RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
  if (src.fd < 0) {
    if (errno == ENOENT) return -1;
    error.add("openat2(").quoted(path).add(", O_PATH, RESOLVE_NO_SYMLINKS)");
    error.fail(SetupStep::kMounts);
    return -1;
  }
  int tree = abi::openTree(src.fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
  if (tree < 0) {
    error.add("open_tree(").quoted(path).add(", OPEN_TREE_CLONE|AT_RECURSIVE)");
    error.fail(SetupStep::kMounts);
    return -1;
  }
  if (!setAttr(tree, path, attrs, true, error)) {
    ::close(tree);
    errno = error.error;
    return -1;
  }
  return tree;
}

bool attach(int tree, int targetFd, const char* path, ChildError& error) noexcept {
  if (abi::moveMount(tree, "", targetFd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    error.add("move_mount(tree, ").quoted(path).add(")");
    return error.fail(SetupStep::kMounts);
  }
  return true;
}

bool mountAt(const char* source, int targetFd, const char* shownTarget, const char* fstype,
             unsigned long flags, const char* data, ChildError& error) noexcept {
  char target[40];
  fdPath(targetFd, target);
  if (::mount(source, target, fstype, flags, data) != 0) {
    error.add("mount(").quoted(source).add(", ").quoted(shownTarget).add(", ")
        .quoted(fstype ? fstype : "").add(", ").hex(flags).add(", ").quoted(data ? data : "")
        .add(")");
    return error.fail(SetupStep::kMounts);
  }
  return true;
}

bool isDir(int fd) noexcept {
  struct stat st;
  return ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

bool buildDev(int rootFd, const char* shmOptions, const char* ptsOptions, ChildError& error) noexcept {
  Fd dev(resolve(rootFd, "/dev"));
  if (dev.fd < 0) {
    error.add("openat2(newroot, \"/dev\")");
    return error.fail(SetupStep::kMounts);
  }
  if (!mountAt("tmpfs", dev.fd, "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, kSmallTmpfs, error)) return false;
  Fd top(resolve(rootFd, "/dev"));  // the fresh tmpfs
  if (top.fd < 0) {
    error.add("openat2(newroot, \"/dev\") after mount");
    return error.fail(SetupStep::kMounts);
  }
  // The tmpfs is fresh and private to this mount namespace, so each entry is
  // created straight in it with O_EXCL|O_NOFOLLOW (no name can be a planted
  // symlink: an existing name fails with EEXIST) and that very inode is the
  // mount target, instead of a path lookup from the new root per node.
  static const char* const kNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
  for (const char* node : kNodes) {
    char hostPath[32] = "/dev/";
    std::strncat(hostPath, node, sizeof(hostPath) - 6);
    Fd placeholder(::openat(top.fd, node, O_CREAT | O_EXCL | O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0444));
    if (placeholder.fd < 0) {
      error.add("openat(\"/dev\", ").quoted(node).add(", O_CREAT|O_EXCL|O_NOFOLLOW, 0444)");
      return error.fail(SetupStep::kMounts);
    }
    // Read-only: the device stays writable (a device node's writes do not
    // need a writable mount), its inode -- the host's -- cannot be changed.
    Fd device(cloneHostTree(hostPath, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, error));
    if (device.fd < 0) {
      if (error.error == 0) error.add("open_tree(").quoted(hostPath).add("): missing on the host");
      return error.fail(SetupStep::kMounts);
    }
    if (!attach(device.fd, placeholder.fd, hostPath, error)) return false;
  }
  // As above, for the two directories.
  auto subdir = [&](const char* name) -> int {
    if (::mkdirat(top.fd, name, 0755) != 0) {
      error.add("mkdirat(\"/dev\", ").quoted(name).add(", 0755)");
      error.fail(SetupStep::kMounts);
      return -1;
    }
    int fd = ::openat(top.fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      error.add("openat(\"/dev\", ").quoted(name).add(", O_PATH|O_DIRECTORY|O_NOFOLLOW)");
      error.fail(SetupStep::kMounts);
    }
    return fd;
  };
  Fd pts(subdir("pts"));
  if (pts.fd < 0) return false;
  if (!mountAt("devpts", pts.fd, "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, ptsOptions, error))
    return false;
  Fd shm(subdir("shm"));
  if (shm.fd < 0) return false;
  if (!mountAt("tmpfs", shm.fd, "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, shmOptions, error)) return false;
  static const char* const kLinks[][2] = {{"pts/ptmx", "ptmx"},        {"/proc/self/fd", "fd"},
                                          {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
                                          {"/proc/self/fd/2", "stderr"}};
  for (const auto& link : kLinks) {
    if (::symlinkat(link[0], top.fd, link[1]) != 0) {
      // O_PATH fds cannot be used as dirfd for symlinkat on every kernel;
      // fall back to the /proc path of the directory.
      char dir[40];
      fdPath(top.fd, dir);
      char full[96];
      std::strcpy(full, dir);
      std::strcat(full, "/");
      std::strcat(full, link[1]);
      if (::symlink(link[0], full) != 0) {
        error.add("symlink(").quoted(link[0]).add(", ").quoted("/dev/").add(link[1]).add(")");
        return error.fail(SetupStep::kMounts);
      }
    }
  }
  return setAttr(top.fd, "/dev", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false, error);
}

}  // namespace

HostSnapshot HostSnapshot::take(const MountPlan& plan) {
  HostSnapshot snapshot;
  snapshot.mountTable_.reset(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
  auto add = [&snapshot](const std::string& path, bool readOnly) {
    if (beneath(path, "/proc")) return;  // the sandbox's own /proc, not a host object
    Entry e;
    e.path = path;
    e.object.reset(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (e.object && ::fstat(e.object.get(), &st) == 0) {
      e.device = st.st_dev;
      e.inode = st.st_ino;
      e.links = st.st_nlink;
      e.countLinks = readOnly && S_ISREG(st.st_mode);
    } else {
      e.object.reset();
    }
    snapshot.entries_.push_back(std::move(e));
  };
  for (const auto* list : {&plan.writable, &plan.carveOuts, &plan.innerMasks})
    for (const auto& p : *list) add(p, false);
  for (const auto* list : {&plan.readOnly, &plan.writeDenied, &plan.uncoverableDenyWrite})
    for (const auto& p : *list) add(p, true);
  for (const auto& m : plan.masks) add(m.path, false);
  return snapshot;
}

bool HostSnapshot::unchanged() const {
  if (!mountTable_) return false;
  pollfd p = {mountTable_.get(), POLLPRI, 0};
  if (::poll(&p, 1, 0) != 0) return false;  // a mount came or went (or poll failed)
  for (const auto& e : entries_) {
    struct stat now;
    bool exists = ::lstat(e.path.c_str(), &now) == 0;
    if (!e.object) {
      if (exists) return false;
      continue;
    }
    struct stat held;
    if (!exists || now.st_dev != e.device || now.st_ino != e.inode) return false;
    if (::fstat(e.object.get(), &held) != 0 || held.st_nlink == 0) return false;  // unlinked meanwhile
    if (e.countLinks && held.st_nlink != e.links) return false;  // a new name for a write-denied file
  }
  return true;
}

MountPlan planMounts(const DerivedRules& rules) {
  const auto& fs = rules.filesystem();
  MountPlan plan;
  plan.writable = policy::brokeredTrees(rules);
  // Write denies need no mount: the broker decides each write by name. What
  // is left to say is where that cannot hold.
  std::vector<std::string> denies;
  for (const auto* list : {&fs.denyWrite, &fs.mandatoryDenyWrite}) denies.insert(denies.end(), list->begin(), list->end());
  std::sort(denies.begin(), denies.end());
  denies.erase(std::unique(denies.begin(), denies.end()), denies.end());
  for (const auto& p : denies) {
    if (beneathAny(p, plan.writable)) {
      struct stat st;
      if (::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        plan.writeDenied.push_back(p);
        if (st.st_nlink > 1) plan.linkedDenyWrite.push_back(p);
      }
    } else if (beneath(p, "/tmp") || beneath(p, "/dev/shm")) {
      plan.uncoverableDenyWrite.push_back(p);
    }
  }
  // The fresh /proc: kernel-wide knobs read-only, as bubblewrap and Docker do.
  // The child may be the host's uid 0, and Landlock (when the kernel has it)
  // must not be the only thing between it and kernel.core_pattern.
  for (const char* p : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}) plan.readOnly.emplace_back(p);

  std::vector<std::string> reads = fs.denyRead;
  std::sort(reads.begin(), reads.end());
  reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  std::vector<std::string> outer;
  for (const auto& p : reads)
    if (!beneathAny(p, outer)) outer.push_back(p);
  for (const auto& p : fs.allowRead) {
    if (!beneathAny(p, outer)) continue;  // visible already
    if (std::find(plan.carveOuts.begin(), plan.carveOuts.end(), p) == plan.carveOuts.end())
      plan.carveOuts.push_back(p);
  }
  std::sort(plan.carveOuts.begin(), plan.carveOuts.end());
  for (const auto& p : outer) {
    bool carved = std::any_of(plan.carveOuts.begin(), plan.carveOuts.end(),
                              [&](const std::string& c) { return beneath(c, p) && c != p; });
    plan.masks.push_back({p, carved});
  }
  for (const auto& p : reads)
    if (beneathAny(p, plan.carveOuts) &&
        std::find(outer.begin(), outer.end(), p) == outer.end())
      plan.innerMasks.push_back(p);
  plan.scratch.assign(plan.writable.size() + plan.carveOuts.size(), -1);
  const std::uint64_t ram =
      static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  plan.tmpOptions = "mode=1777,size=" + std::to_string(sandboxTmpfsBytes(rules.limits().memoryBytes, ram));
  plan.userCounters = planUserCounterCaps();
  plan.ptsOptions = "newinstance,ptmxmode=0666,mode=0620,max=" + std::to_string(plan.userCounters.ptys);
  return plan;
}

std::uint64_t sandboxTmpfsBytes(std::uint64_t memoryBytes, std::uint64_t physicalBytes) noexcept {
  return memoryBytes != 0 ? memoryBytes : physicalBytes / 4;
}

bool applyMounts(const MountPlan& plan, ChildError& error) noexcept {
  // 1. Nothing we mount may propagate back to the host.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    error.add("mount(NULL, \"/\", NULL, MS_REC|MS_PRIVATE)");
    return error.fail(SetupStep::kMounts);
  }
  // 2. Detached copies of the host trees, taken before the staging tmpfs can
  //    hide anything under /tmp.
  Fd root(abi::openTree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
  if (root.fd < 0) {
    error.add("open_tree(\"/\", OPEN_TREE_CLONE|AT_RECURSIVE)");
    return error.fail(SetupStep::kMounts);
  }
  if (!setAttr(root.fd, "/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true, error))
    return false;
  int* slot = plan.scratch.data();
  for (std::size_t i = 0; i < plan.writable.size(); ++i) {
    // Read-only: the child writes nothing in it by itself. It must be the
    // very object the write broker holds (opened by the parent, whose mount
    // namespace a clone cannot be taken from), or the broker would write
    // where the child does not look.
    const char* path = plan.writable[i].c_str();
    *slot = cloneHostTree(path, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, error);
    if (*slot < 0 && error.error != 0) return false;
    struct stat bound, held;
    bool same = (*slot < 0 && plan.writableFds[i] < 0) ||
                (*slot >= 0 && plan.writableFds[i] >= 0 && ::fstat(*slot, &bound) == 0 &&
                 ::fstat(plan.writableFds[i], &held) == 0 && bound.st_dev == held.st_dev &&
                 bound.st_ino == held.st_ino);
    if (plan.writableFds[i] >= 0) ::close(plan.writableFds[i]);
    if (!same) {
      errno = ESTALE;
      error.add("writable tree ").quoted(path).add(" changed between planning and binding");
      return error.fail(SetupStep::kMounts);
    }
    ++slot;
  }
  for (const auto& p : plan.carveOuts) {
    *slot = cloneHostTree(p.c_str(), MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, error);
    if (*slot < 0 && error.error != 0) return false;
    ++slot;
  }

  // 3. The staging tmpfs, private to this mount namespace.
  if (::mount("tmpfs", kStage, "tmpfs", MS_NOSUID | MS_NODEV, kStageTmpfs) != 0) {
    error.add("mount(\"tmpfs\", \"/tmp\", \"tmpfs\", MS_NOSUID|MS_NODEV, ").quoted(kStageTmpfs).add(")");
    return error.fail(SetupStep::kMounts);
  }
  if (::mkdir(kNewRoot, 0755) != 0) {
    error.add("mkdir(\"/tmp/root\", 0755)");
    return error.fail(SetupStep::kMounts);
  }
  {
    Fd empty(::open(kEmptyFile, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444));
    if (empty.fd < 0) {
      error.add("open(\"/tmp/empty\", O_CREAT|O_EXCL, 0444)");
      return error.fail(SetupStep::kMounts);
    }
  }
  if (abi::moveMount(root.fd, "", AT_FDCWD, kNewRoot, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    error.add("move_mount(tree of \"/\", \"/tmp/root\")");
    return error.fail(SetupStep::kMounts);
  }
  Fd newRoot(::open(kNewRoot, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (newRoot.fd < 0) {
    error.add("open(\"/tmp/root\", O_PATH|O_DIRECTORY)");
    return error.fail(SetupStep::kMounts);
  }
  const int rootFd = newRoot.fd;

  // 4. Private /tmp, fresh /proc, minimal /dev.
  {
    Fd tmp(ensure(rootFd, "/tmp", true, error));
    if (tmp.fd < 0) return error.fail(SetupStep::kMounts);
    if (!mountAt("tmpfs", tmp.fd, "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, plan.tmpOptions.c_str(), error)) return false;
    Fd proc(resolve(rootFd, "/proc"));
    if (proc.fd < 0) {
      error.add("openat2(newroot, \"/proc\")");
      return error.fail(SetupStep::kMounts);
    }
    if (!mountAt("proc", proc.fd, "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, error))
      return false;
    if (!plan.userCounters.sysctls.empty()) {  // before step 6 makes /proc/sys read-only
      Fd freshProc(resolve(rootFd, "/proc"));
      if (freshProc.fd < 0) {
        error.add("openat2(newroot, \"/proc\") after mount");
        return error.fail(SetupStep::kMounts);
      }
      if (!applyUserCounterCaps(freshProc.fd, plan.userCounters, error)) return false;
    }
  }
  if (!buildDev(rootFd, plan.tmpOptions.c_str(), plan.ptsOptions.c_str(), error)) return false;

  // 5. Writable binds.
  slot = plan.scratch.data();
  for (const auto& p : plan.writable) {
    Fd tree(*slot++);
    if (tree.fd < 0) continue;  // does not exist on the host
    Fd target(ensure(rootFd, p.c_str(), isDir(tree.fd), error));
    if (target.fd < 0) return error.fail(SetupStep::kMounts);
    if (!attach(tree.fd, target.fd, p.c_str(), error)) return false;
  }
  // 6. /proc's kernel-wide knobs read-only.
  // Mounts a clone of the tree at `p` onto itself, with `attrs` added.
  auto rebind = [&](const std::string& p, std::uint64_t attrs) -> bool {
    Fd target(resolve(rootFd, p.c_str()));
    if (target.fd < 0) {
      if (errno == ENOENT) return true;  // not visible in the sandbox: nothing to write to
      error.add("openat2(newroot, ").quoted(p.c_str()).add(", RESOLVE_NO_SYMLINKS)");
      return error.fail(SetupStep::kMounts);
    }
    Fd tree(abi::openTree(target.fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH));
    if (tree.fd < 0) {
      error.add("open_tree(").quoted(p.c_str()).add(", OPEN_TREE_CLONE|AT_RECURSIVE)");
      return error.fail(SetupStep::kMounts);
    }
    if (!setAttr(tree.fd, p.c_str(), attrs, true, error)) return false;
    return attach(tree.fd, target.fd, p.c_str(), error);
  };
  for (const auto& p : plan.readOnly)
    if (!rebind(p, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) return false;
  // 7. Read masks, then carve-outs, then masks inside carve-outs.
  auto mask = [&](const char* p, bool keepWritable) -> bool {
    Fd target(resolve(rootFd, p));
    if (target.fd < 0) {
      if (errno == ENOENT) return true;  // nothing to hide
      error.add("openat2(newroot, ").quoted(p).add(", RESOLVE_NO_SYMLINKS)");
      return error.fail(SetupStep::kMounts);
    }
    if (isDir(target.fd)) {
      unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | (keepWritable ? 0 : MS_RDONLY);
      return mountAt("tmpfs", target.fd, p, "tmpfs", flags, kSmallTmpfs, error);
    }
    Fd empty(abi::openTree(AT_FDCWD, kEmptyFile, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (empty.fd < 0) {
      error.add("open_tree(\"/tmp/empty\", OPEN_TREE_CLONE)");
      return error.fail(SetupStep::kMounts);
    }
    if (!setAttr(empty.fd, p, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                 false, error))
      return false;
    return attach(empty.fd, target.fd, p, error);
  };
  for (const auto& m : plan.masks)
    if (!mask(m.path.c_str(), m.hasCarveOut)) return false;
  for (const auto& p : plan.carveOuts) {
    Fd tree(*slot++);
    if (tree.fd < 0) continue;
    Fd target(ensure(rootFd, p.c_str(), isDir(tree.fd), error));
    if (target.fd < 0) return error.fail(SetupStep::kMounts);
    if (!attach(tree.fd, target.fd, p.c_str(), error)) return false;
  }
  for (const auto& m : plan.masks) {
    if (!m.hasCarveOut) continue;
    Fd top(resolve(rootFd, m.path.c_str()));
    if (top.fd < 0) {
      if (errno == ENOENT) continue;
      error.add("openat2(newroot, ").quoted(m.path.c_str()).add(")");
      return error.fail(SetupStep::kMounts);
    }
    if (!setAttr(top.fd, m.path.c_str(), MOUNT_ATTR_RDONLY, false, error)) return false;
  }
  for (const auto& p : plan.innerMasks)
    if (!mask(p.c_str(), false)) return false;

  // 8. Pivot into the new root and drop the host tree.
  if (::fchdir(rootFd) != 0) {
    error.add("fchdir(\"/tmp/root\")");
    return error.fail(SetupStep::kMounts);
  }
  if (abi::pivotRoot(".", ".") != 0) {
    error.add("pivot_root(\".\", \".\")");
    return error.fail(SetupStep::kMounts);
  }
  if (::umount2(".", MNT_DETACH) != 0) {
    error.add("umount2(old root, MNT_DETACH)");
    return error.fail(SetupStep::kMounts);
  }
  if (::chdir("/") != 0) {
    error.add("chdir(\"/\")");
    return error.fail(SetupStep::kMounts);
  }
  return true;
}

}  // namespace stockade::platform
