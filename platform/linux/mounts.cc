// ASYNC-SIGNAL-SAFE from applyMounts() down: this code runs between clone and
// exec. No allocation, no stdio, no locks; only syscalls and stack buffers.
// planMounts() is the exception: it runs in the parent.
#include "platform/linux/mounts.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "platform/linux/kernel_abi.h"
#include "platform/linux/mountinfo.h"
#include "platform/linux/raw_syscall.h"
#include "platform/mutation.h"
#include "policy/paths.h"
#include "policy/write_decision.h"

namespace stockade::platform {
namespace {

namespace abi = linux_abi;

constexpr const char* kStage = "/tmp";             // private tmpfs in the child's namespace
constexpr const char* kNewRoot = "/tmp/root";      // the child's future "/"
constexpr const char* kEmptyFile = "/tmp/empty";   // source of file masks: bound read-only over itself
// Mount data of the tmpfs mounts that hold only empty files, directories and
// symlinks (mounts.h); the private /tmp and /dev/shm use MountPlan::tmpOptions.
constexpr const char* kSmallTmpfs = "mode=0755,size=4k";
constexpr const char* kStageTmpfs = "mode=0700,size=4k";

bool beneath(std::string_view path, std::string_view root) { return policy::isWithin(path, root); }

bool beneathAny(std::string_view path, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const std::string& r) { return beneath(path, r); });
}

using Op = MountPlan::Op;
using Kind = MountPlan::Op::Kind;
using Source = MountView::Source;

// At one path: what stockade builds first, then host trees (a brokered tree
// over a carve-out of the same path), then what changes them; a mask last.
int rank(Kind kind) {
  switch (kind) {
    case Kind::kPrivateTmp:
    case Kind::kProc:
    case Kind::kDev: return 0;
    case Kind::kCarveOut:
    case Kind::kLink: return 1;
    case Kind::kBrokered: return 2;
    case Kind::kReadOnly: return 3;
    case Kind::kMask: return 4;
    case Kind::kWorkspace: return 5;
  }
  return 6;
}

// The entries of the minimal /dev a program may write (buildDev()).
bool devWritable(std::string_view path) {
  for (const char* node : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
                           "/dev/stdin", "/dev/stdout", "/dev/stderr"})
    if (path == node) return true;
  return beneath(path, "/dev/shm") || beneath(path, "/dev/pts") || beneath(path, "/dev/fd");
}

// --- child side: everything below is async-signal-safe -------------------

// "/proc/self/fd/<fd>" into `out`.
void fdPath(int fd, char (&out)[40]) noexcept {
  ChildError scratch;
  scratch.add("/proc/self/fd/").number(fd);
  sys::copy(out, scratch.call, sizeof(out) - 1);
  out[sizeof(out) - 1] = '\0';
}

struct Fd {  // a tiny owner usable in the child (UniqueFd is fine too, but keep it local)
  int fd = -1;
  explicit Fd(int f) noexcept : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) sys::close(fd);
  }
};

// Resolves `path` (absolute, sandbox view) inside the new root without
// following any symlink. Returns an O_PATH fd or -1 with errno.
int resolve(int rootFd, const char* path) noexcept {
  while (*path == '/') ++path;
  if (*path == '\0') return static_cast<int>(sys::fcntl(rootFd, F_DUPFD_CLOEXEC, 0));
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
  int dir = static_cast<int>(sys::fcntl(rootFd, F_DUPFD_CLOEXEC, 0));
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
        if (sys::mkdirat(dir, component, 0755) != 0 && errno != EEXIST) {
          error.add("mkdirat(").quoted(path).add(" component ").quoted(component).add(", 0755)");
          sys::close(dir);
          return -1;
        }
      } else {
        int f = sys::openat(dir, component, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (f < 0) {
          error.add("openat(").quoted(path).add(", O_CREAT|O_EXCL, 0444)");
          sys::close(dir);
          return -1;
        }
        sys::close(f);
      }
      next = abi::openat2(dir, component, O_PATH | O_CLOEXEC | O_NOFOLLOW,
                          RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    }
    if (next < 0) {
      error.add("openat2(newroot, ").quoted(path).add(" component ").quoted(component)
          .add(", RESOLVE_NO_SYMLINKS)");
      sys::close(dir);
      return -1;
    }
    sys::close(dir);
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
    sys::close(tree);
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
  if (sys::mount(source, target, fstype, flags, data) != 0) {
    error.add("mount(").quoted(source).add(", ").quoted(shownTarget).add(", ")
        .quoted(fstype ? fstype : "").add(", ").hex(flags).add(", ").quoted(data ? data : "")
        .add(")");
    return error.fail(SetupStep::kMounts);
  }
  return true;
}

// Binds the object `sourceFd` holds (O_PATH) at `targetFd`, keeping the
// attributes of the mount it is on: one mount(MS_BIND) where open_tree(),
// mount_setattr() and move_mount() take three.
bool bindAt(int sourceFd, int targetFd, const char* shownSource, ChildError& error) noexcept {
  char source[40], target[40];
  fdPath(sourceFd, source);
  fdPath(targetFd, target);
  if (sys::mount(source, target, nullptr, MS_BIND, nullptr) != 0) {
    error.add("mount(").quoted(shownSource).add(", MS_BIND)");
    return error.fail(SetupStep::kMounts);
  }
  return true;
}

bool isDir(int fd) noexcept {
  struct stat st;
  return sys::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

// symlinkat(target, dir, name); O_PATH directory fds are not accepted as
// dirfd by symlinkat on every kernel, so the /proc path of `dir` is the fallback.
bool symlinkIn(int dirFd, const char* target, const char* name) noexcept {
  if (sys::symlinkat(target, dirFd, name) == 0) return true;
  char full[4200];
  char dir[40];
  fdPath(dirFd, dir);
  const std::size_t dirLength = sys::length(dir), nameLength = sys::length(name);
  if (dirLength + 1 + nameLength + 1 > sizeof full) {
    errno = ENAMETOOLONG;
    return false;
  }
  sys::copy(full, dir, dirLength);
  full[dirLength] = '/';
  sys::copy(full + dirLength + 1, name, nameLength + 1);
  return sys::symlink(target, full) == 0;
}

// Re-creates the symlink `path` -> `target` inside a tmpfs of the sandbox
// (a mask or the empty root), making its parent directories there.
bool makeLink(int rootFd, const char* path, const char* target, ChildError& error) noexcept {
  const char* slash = path;  // the last '/' (paths are absolute)
  for (const char* p = path; (p = sys::find(p, '/')) != nullptr; ++p) slash = p;
  char parent[4096];
  std::size_t n = static_cast<std::size_t>(slash - path);
  if (n >= sizeof parent) {
    errno = ENAMETOOLONG;
    error.add("symlink(").quoted(target).add(", ").quoted(path).add(")");
    return error.fail(SetupStep::kMounts);
  }
  sys::copy(parent, path, n);
  parent[n == 0 ? 1 : n] = '\0';
  if (n == 0) parent[0] = '/';
  Fd dir(ensure(rootFd, parent, true, error));
  if (dir.fd < 0) return error.fail(SetupStep::kMounts);
  if (!symlinkIn(dir.fd, target, slash + 1)) {
    error.add("symlink(").quoted(target).add(", ").quoted(path).add(")");
    return error.fail(SetupStep::kMounts);
  }
  return true;
}

bool buildDev(int rootFd, const char* shmOptions, const char* ptsOptions, ChildError& error) noexcept {
  Fd dev(ensure(rootFd, "/dev", true, error));  // made in the empty root
  if (dev.fd < 0) return error.fail(SetupStep::kMounts);
  if (!mountAt("tmpfs", dev.fd, "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, kSmallTmpfs, error)) return false;
  Fd top(resolve(rootFd, "/dev"));  // the fresh tmpfs
  if (top.fd < 0) {
    error.add("openat2(newroot, \"/dev\") after mount");
    return error.fail(SetupStep::kMounts);
  }
  // The tmpfs is fresh and private to this mount namespace, so each entry is
  // created straight in it with O_EXCL|O_NOFOLLOW (no name can be a planted
  // symlink: an existing name fails with EEXIST) and that very inode is the
  // mount target, instead of a path lookup from the new root per node. Each
  // host node (looked up without following symlinks) is bound with one
  // mount(); the read-only, nosuid, noexec attributes are set on them all at
  // once below, with /dev's own.
  static const char* const kNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
  for (const char* node : kNodes) {
    ChildError text;  // a bounded string builder with no libc
    const char* hostPath = text.add("/dev/").add(node).call;
    Fd placeholder(sys::openat(top.fd, node, O_CREAT | O_EXCL | O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0444));
    if (placeholder.fd < 0) {
      error.add("openat(\"/dev\", ").quoted(node).add(", O_CREAT|O_EXCL|O_NOFOLLOW, 0444)");
      return error.fail(SetupStep::kMounts);
    }
    Fd device(abi::openat2(AT_FDCWD, hostPath, O_PATH | O_CLOEXEC | O_NOFOLLOW, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (device.fd < 0) {
      error.add("openat2(").quoted(hostPath).add(", O_PATH, RESOLVE_NO_SYMLINKS)");
      return error.fail(SetupStep::kMounts);
    }
    if (!bindAt(device.fd, placeholder.fd, hostPath, error)) return false;
  }
  // As above, for the two directories.
  auto subdir = [&](const char* name) -> int {
    if (sys::mkdirat(top.fd, name, 0755) != 0) {
      error.add("mkdirat(\"/dev\", ").quoted(name).add(", 0755)");
      error.fail(SetupStep::kMounts);
      return -1;
    }
    int fd = sys::openat(top.fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      error.add("openat(\"/dev\", ").quoted(name).add(", O_PATH|O_DIRECTORY|O_NOFOLLOW)");
      error.fail(SetupStep::kMounts);
    }
    return fd;
  };
  Fd pts(subdir("pts"));
  if (pts.fd < 0) return false;
  Fd shm(subdir("shm"));
  if (shm.fd < 0) return false;
  static const char* const kLinks[][2] = {{"pts/ptmx", "ptmx"},        {"/proc/self/fd", "fd"},
                                          {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
                                          {"/proc/self/fd/2", "stderr"}};
  for (const auto& link : kLinks) {
    if (!symlinkIn(top.fd, link[0], link[1])) {
      error.add("symlink(").quoted(link[0]).add(", ").quoted("/dev/").add(link[1]).add(")");
      return error.fail(SetupStep::kMounts);
    }
  }
  // /dev and the nodes bound in it: read-only (a device stays writable -- a
  // device node's writes do not need a writable mount -- but its inode, the
  // host's, cannot be changed), nosuid, noexec. Before devpts and /dev/shm
  // are mounted, which stay writable.
  if (!setAttr(top.fd, "/dev", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, true, error)) return false;
  if (!mountAt("devpts", pts.fd, "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, ptsOptions, error))
    return false;
  return mountAt("tmpfs", shm.fd, "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, shmOptions, error);
}

}  // namespace

HostSnapshot HostSnapshot::take(const MountPlan& plan) {
  HostSnapshot snapshot;
  snapshot.mountTable_ = MountTableWatch::generation();
  auto add = [&snapshot](const std::string& path, bool readOnly) {
    Entry e;
    e.path = path;
    e.object = HostPin::open(path.c_str());
    e.countLinks = e.object && readOnly && S_ISREG(e.object.mode());
    snapshot.entries_.push_back(std::move(e));
  };
  for (const auto& op : plan.ops) {
    // The sandbox's own trees are not host objects.
    if (op.kind == Kind::kPrivateTmp || op.kind == Kind::kProc || op.kind == Kind::kDev) continue;
    // A second view of objects the other operations hold.
    if (op.kind == Kind::kWorkspace) continue;
    if (beneath(op.path, "/proc")) continue;
    add(op.path, op.kind == Kind::kReadOnly);
  }
  for (const auto& p : plan.writeDenied) add(p, true);
  return snapshot;
}

bool HostSnapshot::unchanged() const {
  if (!mountTable_ || MountTableWatch::generation() != mountTable_) return false;  // a mount came or went
  for (const auto& e : entries_) {
    struct stat now;
    bool exists = ::lstat(e.path.c_str(), &now) == 0;
    if (!e.object) {
      if (exists) return false;
      continue;
    }
    struct stat held;
    if (!exists || now.st_dev != e.object.device() || now.st_ino != e.object.inode()) return false;
    if (::fstat(e.object.fd(), &held) != 0 || held.st_nlink == 0) return false;  // unlinked meanwhile
    if (e.countLinks && held.st_nlink != e.object.links()) return false;  // a new name for a write-denied file
  }
  return true;
}

const char* mountOpName(Kind kind) noexcept {
  switch (kind) {
    case Kind::kPrivateTmp: return "the private /tmp";
    case Kind::kProc: return "the sandbox's /proc";
    case Kind::kDev: return "the sandbox's /dev";
    case Kind::kCarveOut: return "a read-only carve-out";
    case Kind::kLink: return "a re-created symlink";
    case Kind::kBrokered: return "a brokered tree";
    case Kind::kReadOnly: return "a read-only bind";
    case Kind::kMask: return "a mask";
    case Kind::kWorkspace: return "the workspace's mount";
  }
  return "?";
}

std::vector<std::string> MountPlan::brokeredTrees() const {
  std::vector<std::string> out;
  if (root == Root::kHostBrokered) out.emplace_back("/");
  for (const auto& op : ops)
    if (op.kind == Kind::kBrokered) out.push_back(op.path);
  return out;
}

std::vector<std::string> MountPlan::ownTrees() const {
  std::vector<std::string> out;
  for (const auto& op : ops)
    if (op.kind == Kind::kPrivateTmp || op.kind == Kind::kProc || op.kind == Kind::kDev) out.push_back(op.path);
  return out;
}

MountView viewAt(const MountPlan& plan, std::string_view path) {
  MountView v;
  const bool emptyRoot = plan.root == MountPlan::Root::kEmpty || plan.root == MountPlan::Root::kRebuilt;
  v.source = emptyRoot ? Source::kEmpty : Source::kHost;
  v.brokered = plan.root == MountPlan::Root::kHostBrokered;
  for (const auto& op : plan.ops) {
    if (!beneath(path, op.path)) continue;
    switch (op.kind) {
      case Kind::kPrivateTmp: v = {Source::kPrivateTmp, true, false, &op}; break;
      case Kind::kProc: v = {Source::kProc, true, false, &op}; break;
      case Kind::kDev: v = {Source::kDev, devWritable(path), false, &op}; break;
      case Kind::kCarveOut:
      case Kind::kLink: v = {Source::kHost, false, false, &op}; break;
      case Kind::kBrokered: v = {Source::kHost, false, true, &op}; break;
      // The child's own rights end here; the broker's do not (it writes
      // through the tree's descriptor): a brokered view stays brokered.
      case Kind::kReadOnly: v.writable = false; break;
      case Kind::kMask: v = {Source::kEmpty, false, false, &op}; break;
      // The host's object here is hidden, unless it is the workspace's own
      // (a workspace beneath /workspace): that one shows, with its view.
      case Kind::kWorkspace:
        if (!beneath(path, op.target)) v = {Source::kEmpty, false, false, &op};
        break;
    }
  }
  return v;
}

std::string WorkspaceMount::hostPath(std::string_view sandboxPath) const {
  if (!aliased() || !beneath(sandboxPath, kMountPoint)) return std::string(sandboxPath);
  return host + std::string(sandboxPath.substr(kMountPoint.size()));
}

std::string WorkspaceMount::sandboxPath(std::string_view hostPath) const {
  if (!aliased() || !beneath(hostPath, host)) return std::string(hostPath);
  return std::string(kMountPoint) + std::string(hostPath.substr(host == "/" ? 0 : host.size()));
}

MountPlan planMounts(const DerivedRules& rules, const WorkspaceMount& workspace) {
  const auto& fs = rules.filesystem();
  // Writable through an allowWrite tree: the host's object, bound.
  auto hostWritable = [&](std::string_view p) { return beneathAny(p, fs.allowWrite) && rules.writable(p); };
  MountPlan plan;
  plan.workspace = workspace;
  if (!rules.readable("/")) plan.root = MountPlan::Root::kEmpty;
  else if (workspace.aliased()) plan.root = MountPlan::Root::kRebuilt;  // brokered root: refused by coverage
  else if (hostWritable("/")) plan.root = MountPlan::Root::kHostBrokered;

  // Every operation the rules could need, then, in path order, those that
  // change what the view shows where the rules need it changed. (Views of
  // the rules' strings: only the operations taken are copied.)
  struct Candidate {
    Kind kind;
    std::string_view path;
    // kBrokered: the nearest directory the host has of a missing allowWrite
    // tree (`entry`), which it holds.
    bool holder = false;
    std::string_view entry = {};
  };
  std::vector<Candidate> candidates = {{Kind::kProc, "/proc"}, {Kind::kDev, "/dev"}};
  const bool hostTmp = hostWritable("/tmp");
  if (!hostTmp) candidates.push_back({Kind::kPrivateTmp, "/tmp"});
  // An allowWrite tree the host does not have yet has nothing to bind: its
  // nearest directory the host has is brokered instead, where the broker
  // lets the child make the directories on the way to it and nothing else
  // (write_decision.h), so that it is writable once the child makes it.
  std::vector<std::string> holders;
  holders.reserve(fs.allowWrite.size());  // (the candidates view these strings)
  for (const auto* list : {&fs.allowWrite, &fs.defaultWrite})
    for (const auto& p : *list) {
      if (p == "/" || beneath(p, "/dev") || beneath(p, "/proc") || (p == "/tmp" && !hostTmp)) continue;
      struct stat st;
      if (list == &fs.allowWrite && ::lstat(p.c_str(), &st) != 0) {
        std::string up = p;
        while (up != "/" && !(::stat(up.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
          up = up.substr(0, std::max<std::size_t>(1, up.rfind('/')));
        if (up == "/" || beneath(up, "/dev") || beneath(up, "/proc")) {
          plan.missingWritable.push_back(p);  // none to broker: the coverage check names it
          continue;
        }
        holders.push_back(std::move(up));
        candidates.push_back({Kind::kBrokered, holders.back(), true, p});
        continue;
      }
      candidates.push_back({Kind::kBrokered, p});
    }
  // The fresh /proc: kernel-wide knobs read-only, as bubblewrap and Docker do.
  // The child may be the host's uid 0, and Landlock (when the kernel has it)
  // must not be the only thing between it and kernel.core_pattern.
  for (const char* p : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"})
    candidates.push_back({Kind::kReadOnly, p});
  for (const auto* list : {&fs.denyWrite, &fs.mandatoryDenyWrite})
    for (const auto& p : *list) candidates.push_back({Kind::kReadOnly, p});
  for (const auto& p : fs.denyRead)
    if (p != "/") candidates.push_back({Kind::kMask, p});
  for (const auto& p : fs.allowRead) candidates.push_back({Kind::kCarveOut, p});
  // The rebuilt root: the host's top-level entries, read-only, but those the
  // sandbox provides itself or brokers, and what the host has at /workspace.
  std::vector<std::string> topLevel;
  if (plan.root == MountPlan::Root::kRebuilt) {
    if (DIR* d = ::opendir("/")) {
      while (const dirent* e = ::readdir(d)) {
        std::string p = std::string("/") + e->d_name;
        // (/tmp is the private one, or the host's brokered.)
        if (p == "/." || p == "/.." || p == "/proc" || p == "/dev" || p == "/tmp" || hostWritable(p) ||
            p == WorkspaceMount::kMountPoint)
          continue;
        topLevel.push_back(std::move(p));
      }
      ::closedir(d);
    }
    for (const auto& p : topLevel) candidates.push_back({Kind::kCarveOut, p});
  }
  // The workspace shows at /workspace only where it shows at its own path:
  // one not otherwise visible (beneath the private /tmp, or the rebuilt root's
  // /workspace) is bound read-only.
  if (workspace.aliased()) candidates.push_back({Kind::kCarveOut, workspace.host});
  // An ancestor sorts first (a prefix), then by rank at one path.
  auto inOrder = [](const auto& a, const auto& b) {
    return a.path != b.path ? a.path < b.path : rank(a.kind) < rank(b.kind);
  };
  std::sort(candidates.begin(), candidates.end(), inOrder);

  for (auto& c : candidates) {
    const std::string path(c.path);
    const MountView v = viewAt(plan, path);
    std::string target;
    bool take = false;
    switch (c.kind) {
      case Kind::kPrivateTmp:
      case Kind::kProc:
      case Kind::kDev: take = true; break;
      case Kind::kBrokered:
        // A holder shows no more than the view shows there already: the
        // host's own directory, not a masked or private one.
        take = c.holder ? v.source == Source::kHost && !v.brokered
                        : rules.writable(path) && !(v.source == Source::kHost && v.brokered) &&
                              (v.source == Source::kHost || v.source == Source::kEmpty || v.source == Source::kPrivateTmp);
        if (c.holder && !take && !(v.source == Source::kHost && v.brokered)) plan.missingWritable.emplace_back(c.entry);
        break;
      case Kind::kReadOnly: {
        if (v.brokered) {
          // The broker refuses writes here by path, whether or not the path
          // exists: no mount. A file with other names stays writable
          // through them (a degradation).
          struct stat st;
          if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
            plan.writeDenied.push_back(path);
            if (st.st_nlink > 1) plan.linkedDenyWrite.push_back(path);
          }
          break;
        }
        // The sandbox's own /tmp and /dev hold no host object to protect
        // (the rule is about the host's, which the child cannot reach there).
        take = v.writable && v.source == Source::kProc;
        break;
      }
      case Kind::kMask: take = v.source == Source::kHost || v.source == Source::kProc || v.source == Source::kDev; break;
      case Kind::kCarveOut: {
        const bool hiddenWorkspace = path == workspace.host && v.source == Source::kPrivateTmp;
        if (!rules.readable(path) || (v.source != Source::kEmpty && !hiddenWorkspace)) break;
        struct stat st;
        if (::lstat(path.c_str(), &st) != 0) break;  // nothing to show
        if (S_ISLNK(st.st_mode)) {
          char text[PATH_MAX];
          ssize_t n = ::readlink(path.c_str(), text, sizeof text);
          if (n <= 0) break;
          c.kind = Kind::kLink;
          target.assign(text, static_cast<std::size_t>(n));
        }
        take = true;
        break;
      }
      case Kind::kLink:
      case Kind::kWorkspace: break;  // not candidates
    }
    if (take && (plan.ops.empty() || plan.ops.back().path != path || plan.ops.back().kind != c.kind))
      plan.ops.push_back({c.kind, path, std::move(target)});
  }

  if (workspace.aliased())
    plan.ops.push_back({Kind::kWorkspace, std::string(WorkspaceMount::kMountPoint), workspace.host});

  std::size_t slots = 0;
  for (std::size_t i = 0; i < plan.ops.size(); ++i) {
    Op& op = plan.ops[i];
    if (op.kind == Kind::kBrokered || op.kind == Kind::kCarveOut) ++slots;
    if (op.kind == Kind::kMask)
      op.sealAfter = std::any_of(plan.ops.begin() + static_cast<std::ptrdiff_t>(i) + 1, plan.ops.end(),
                                 [&](const Op& later) { return beneath(later.path, op.path); });
  }
  plan.scratch.assign(slots, -1);
  const std::uint64_t ram =
      static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  plan.tmpOptions = "mode=1777,size=" + std::to_string(sandboxTmpfsBytes(rules.limits().memoryBytes, ram));
  plan.userCounters = planUserCounterCaps();
  plan.ptsOptions = "newinstance,ptmxmode=0666,mode=0620,max=" + std::to_string(plan.userCounters.ptys);
  return plan;
}

void readHostMounts(const DerivedRules& rules, MountPlan& plan) {
  // The mount holding each brokered tree, and the mounts beneath it.
  std::vector<std::string>& out = plan.readOnlyHost;
  out.clear();
  const std::vector<std::string> trees = plan.brokeredTrees();
  for (const auto& t : trees) {
    struct statvfs st;
    if (::statvfs(t.c_str(), &st) == 0 && (st.f_flag & ST_RDONLY)) out.push_back(t);
  }
  if (trees.empty() && rules.filesystem().denyRead.empty()) return;
  const std::vector<MountEntry> table = currentMounts();
  auto belowATree = [&](std::string_view p) {
    return std::any_of(trees.begin(), trees.end(), [&](std::string_view t) { return p != t && beneath(p, t); });
  };
  for (const auto& m : table)
    if ((m.readOnly || m.superReadOnly) && belowATree(m.mountPoint) &&
        std::find(out.begin(), out.end(), m.mountPoint) == out.end())
      out.push_back(m.mountPoint);
  plan.deniedElsewhere = deniedElsewhere(rules, table);
  plan.aliasingHost = aliasingMounts(trees, table);
}

std::vector<MountPlan::AliasingMount> aliasingMounts(const std::vector<std::string>& trees,
                                                     const std::vector<MountEntry>& table) {
  // Filesystems whose lookups also match a name the entry was given beside
  // its own: FAT's and NTFS's 8.3 short names, SMB servers' (Windows's 8.3,
  // Samba's mangled names).
  static constexpr std::string_view kAliasing[] = {"vfat", "msdos", "ntfs", "ntfs3", "cifs", "smb3"};
  std::vector<MountPlan::AliasingMount> out;
  for (const auto& t : trees) {
    const MountEntry* holding = nullptr;
    for (const auto& m : table)
      if (beneath(t, m.mountPoint) && (!holding || m.mountPoint.size() >= holding->mountPoint.size())) holding = &m;
    for (const auto& m : table) {
      if (&m != holding && !beneath(m.mountPoint, t)) continue;
      if (std::find(std::begin(kAliasing), std::end(kAliasing), m.fsType) == std::end(kAliasing)) continue;
      if (std::none_of(out.begin(), out.end(), [&](const auto& a) { return a.path == m.mountPoint; }))
        out.push_back({m.mountPoint, m.fsType});
    }
  }
  return out;
}

std::vector<MountPlan::OtherName> deniedElsewhere(const DerivedRules& rules, const std::vector<MountEntry>& table) {
  std::vector<MountPlan::OtherName> out;
  // `path` from its filesystem's root, through the deepest mount holding it
  // (the last of equal mount points: the one on top).
  auto locate = [&](const std::string& path) -> const MountEntry* {
    const MountEntry* best = nullptr;
    for (const auto& m : table)
      if (beneath(path, m.mountPoint) && (!best || m.mountPoint.size() >= best->mountPoint.size())) best = &m;
    return best;
  };
  auto join = [](std::string_view base, std::string_view rest) {
    if (rest.empty()) return std::string(base);
    return base == "/" ? std::string(rest) : std::string(base) + std::string(rest);
  };
  for (const auto& denied : rules.filesystem().denyRead) {
    if (denied == "/" || rules.readable(denied)) continue;  // the whole root is rebuilt; a carved-back path shows anyway
    const MountEntry* at = locate(denied);
    if (!at || !beneath(denied, at->mountPoint)) continue;
    const std::string inFs = join(at->root, std::string_view(denied).substr(at->mountPoint == "/" ? 0 : at->mountPoint.size()));
    for (const auto& m : table) {
      if (&m == at || m.device != at->device) continue;
      std::string name;
      if (beneath(m.root, inFs)) name = m.mountPoint;  // a part of the denied object, mounted here
      else if (beneath(inFs, m.root))                   // the denied object, inside what is mounted here
        name = join(m.mountPoint, std::string_view(inFs).substr(m.root == "/" ? 0 : m.root.size()));
      else
        continue;
      if (beneath(name, denied)) continue;  // inside the mask already
      if (locate(name) != &m) continue;  // another mount covers it there
      if (std::none_of(out.begin(), out.end(), [&](const auto& o) { return o.denied == denied && o.path == name; }))
        out.push_back({denied, std::move(name)});
    }
  }
  return out;
}

std::uint64_t sandboxTmpfsBytes(std::uint64_t memoryBytes, std::uint64_t physicalBytes) noexcept {
  return memoryBytes != 0 ? memoryBytes : physicalBytes / 4;
}

bool applyMounts(const MountPlan& plan, ChildError& error) noexcept {
  // 1. Nothing we mount may propagate back to the host.
  if (sys::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    error.add("mount(NULL, \"/\", NULL, MS_REC|MS_PRIVATE)");
    return error.fail(SetupStep::kMounts);
  }
  // 2. Detached copies of the host trees, taken before the staging tmpfs can
  //    hide anything under /tmp.
  // Each brokered tree bound must be the very object the write broker holds
  // (opened by the parent, whose mount namespace a clone cannot be taken
  // from), or the broker would write where the child does not look. The
  // child's copies of the broker's descriptors are closed on the way.
  std::size_t nextTree = 0;
  auto sameAsBroker = [&](int clone, const char* path) -> bool {
    const int held = nextTree < plan.writableFds.size() ? plan.writableFds[nextTree] : -2;
    ++nextTree;
    struct stat bound, heldSt;
    const bool same = (clone < 0 && held == -1) ||
                      (clone >= 0 && held >= 0 && sys::fstat(clone, &bound) == 0 && sys::fstat(held, &heldSt) == 0 &&
                       bound.st_dev == heldSt.st_dev && bound.st_ino == heldSt.st_ino);
    if (held >= 0) sys::close(held);
    if (same) return true;
    errno = ESTALE;
    error.add("brokered tree ").quoted(path).add(held == -2 ? " has no descriptor of the write broker"
                                                            : " changed between planning and binding");
    return error.fail(SetupStep::kMounts);
  };
  // scripts/mutate: each layer below left out on its own (platform/mutation.h).
  using mutation::disabled, mutation::Layer;
  // (empty-root: denyRead "/"'s empty root; a workspace's rebuilt root stays.)
  const bool emptyRoot = plan.root == MountPlan::Root::kRebuilt ||
                         (plan.root == MountPlan::Root::kEmpty && !disabled(Layer::kEmptyRoot));
  const std::uint64_t readOnlyRoot = disabled(Layer::kReadOnlyRoot) ? 0 : MOUNT_ATTR_RDONLY;
  const std::uint64_t readOnlyTrees = disabled(Layer::kBrokeredReadOnly) ? 0 : MOUNT_ATTR_RDONLY;
  Fd root(-1);
  if (!emptyRoot) {
    root.fd = abi::openTree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (root.fd < 0) {
      error.add("open_tree(\"/\", OPEN_TREE_CLONE|AT_RECURSIVE)");
      return error.fail(SetupStep::kMounts);
    }
    // Read-only either way: a brokered root's writes are the broker's.
    if (!setAttr(root.fd, "/", readOnlyRoot | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true, error)) return false;
    if (plan.root == MountPlan::Root::kHostBrokered && !sameAsBroker(root.fd, "/")) return false;
  }
  int* slot = plan.scratch.data();
  for (const auto& op : plan.ops) {
    if (op.kind != Kind::kBrokered && op.kind != Kind::kCarveOut) continue;
    const std::uint64_t readOnly = op.kind == Kind::kBrokered ? readOnlyTrees : MOUNT_ATTR_RDONLY;
    *slot = cloneHostTree(op.path.c_str(), readOnly | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, error);
    if (*slot < 0 && error.error != 0) return false;
    if (op.kind == Kind::kBrokered && !sameAsBroker(*slot, op.path.c_str())) return false;
    ++slot;
  }
  for (; nextTree < plan.writableFds.size(); ++nextTree)
    if (plan.writableFds[nextTree] >= 0) sys::close(plan.writableFds[nextTree]);

  // 3. The staging tmpfs, private to this mount namespace.
  if (sys::mount("tmpfs", kStage, "tmpfs", MS_NOSUID | MS_NODEV, kStageTmpfs) != 0) {
    error.add("mount(\"tmpfs\", \"/tmp\", \"tmpfs\", MS_NOSUID|MS_NODEV, ").quoted(kStageTmpfs).add(")");
    return error.fail(SetupStep::kMounts);
  }
  if (sys::mkdir(kNewRoot, 0755) != 0) {
    error.add("mkdir(\"/tmp/root\", 0755)");
    return error.fail(SetupStep::kMounts);
  }
  // The source of every file mask: an empty file, bound read-only over
  // itself once, so that each mask is one bind that keeps its attributes.
  Fd emptyFile(-1);
  {
    Fd empty(sys::open(kEmptyFile, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444));
    if (empty.fd < 0) {
      error.add("open(\"/tmp/empty\", O_CREAT|O_EXCL, 0444)");
      return error.fail(SetupStep::kMounts);
    }
    Fd tree(abi::openTree(empty.fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
    if (tree.fd < 0) {
      error.add("open_tree(\"/tmp/empty\", OPEN_TREE_CLONE)");
      return error.fail(SetupStep::kMounts);
    }
    if (!setAttr(tree.fd, kEmptyFile, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                 false, error) ||
        !attach(tree.fd, empty.fd, kEmptyFile, error))
      return false;
    emptyFile.fd = sys::open(kEmptyFile, O_PATH | O_NOFOLLOW | O_CLOEXEC);  // the read-only bind
    if (emptyFile.fd < 0) {
      error.add("open(\"/tmp/empty\", O_PATH) after binding it read-only");
      return error.fail(SetupStep::kMounts);
    }
  }
  // 4. The new root: the host tree, or (denyRead "/", a workspace) an empty
  //    tmpfs that stays writable until every mount point in it is made.
  if (emptyRoot) {
    if (sys::mount("tmpfs", kNewRoot, "tmpfs", MS_NOSUID | MS_NODEV, kSmallTmpfs) != 0) {
      error.add("mount(\"tmpfs\", \"/tmp/root\", \"tmpfs\", MS_NOSUID|MS_NODEV, ").quoted(kSmallTmpfs).add(")");
      return error.fail(SetupStep::kMounts);
    }
  } else if (abi::moveMount(root.fd, "", AT_FDCWD, kNewRoot, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    error.add("move_mount(tree of \"/\", \"/tmp/root\")");
    return error.fail(SetupStep::kMounts);
  }
  Fd newRoot(sys::open(kNewRoot, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (newRoot.fd < 0) {
    error.add("open(\"/tmp/root\", O_PATH|O_DIRECTORY)");
    return error.fail(SetupStep::kMounts);
  }
  const int rootFd = newRoot.fd;

  // 5. Every operation, in path order (an operation lands on top of those at
  //    its ancestors).
  // Mounts a clone of the view at `p` onto itself, read-only at every depth.
  auto readOnly = [&](const char* p) -> bool {
    Fd target(resolve(rootFd, p));
    if (target.fd < 0) {
      if (errno == ENOENT) return true;  // not visible in the sandbox: nothing to write to
      error.add("openat2(newroot, ").quoted(p).add(", RESOLVE_NO_SYMLINKS)");
      return error.fail(SetupStep::kMounts);
    }
    Fd tree(abi::openTree(target.fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH));
    if (tree.fd < 0) {
      error.add("open_tree(").quoted(p).add(", OPEN_TREE_CLONE|AT_RECURSIVE)");
      return error.fail(SetupStep::kMounts);
    }
    if (!setAttr(tree.fd, p, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true, error)) return false;
    return attach(tree.fd, target.fd, p, error);
  };
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
    return bindAt(emptyFile.fd, target.fd, p, error);
  };
  // A host tree cloned in step 2, attached at its path (made in a tmpfs when missing).
  auto bindClone = [&](int clone, const char* p) -> bool {
    Fd tree(clone);
    if (tree.fd < 0) return true;  // does not exist on the host
    Fd target(ensure(rootFd, p, isDir(tree.fd), error));
    if (target.fd < 0) return error.fail(SetupStep::kMounts);
    return attach(tree.fd, target.fd, p, error);
  };
  slot = plan.scratch.data();
  for (const auto& op : plan.ops) {
    const char* p = op.path.c_str();
    bool ok = true;
    switch (op.kind) {
      case Kind::kPrivateTmp: {
        Fd tmp(ensure(rootFd, p, true, error));
        ok = tmp.fd >= 0 ? mountAt("tmpfs", tmp.fd, p, "tmpfs", MS_NOSUID | MS_NODEV, plan.tmpOptions.c_str(), error)
                         : error.fail(SetupStep::kMounts);
        break;
      }
      case Kind::kProc: {
        // Without a pid namespace of its own the sandbox may not mount a
        // proc (the host's, read-only, stays visible instead).
        if (disabled(Layer::kPidNamespace)) break;
        Fd proc(ensure(rootFd, p, true, error));
        ok = proc.fd >= 0 ? mountAt("proc", proc.fd, p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, error)
                          : error.fail(SetupStep::kMounts);
        if (ok && !plan.userCounters.sysctls.empty()) {  // before the read-only /proc/sys (a later op)
          Fd freshProc(resolve(rootFd, p));
          if (freshProc.fd < 0) {
            error.add("openat2(newroot, \"/proc\") after mount");
            return error.fail(SetupStep::kMounts);
          }
          ok = applyUserCounterCaps(freshProc.fd, plan.userCounters, error);
        }
        break;
      }
      case Kind::kDev: ok = buildDev(rootFd, plan.tmpOptions.c_str(), plan.ptsOptions.c_str(), error); break;
      case Kind::kBrokered:
      case Kind::kCarveOut: ok = bindClone(*slot++, p); break;
      case Kind::kLink:
        // Without the empty root the host's own link is there already.
        ok = makeLink(rootFd, p, op.target.c_str(), error) || (!emptyRoot && (error = ChildError{}, true));
        break;
      case Kind::kReadOnly:
        // (planMounts() makes a view read-only only in the sandbox's /proc:
        // elsewhere the write broker refuses denied writes by name.)
        ok = disabled(Layer::kProcReadOnly) || readOnly(p);
        break;
      case Kind::kMask: ok = disabled(Layer::kReadMasks) || mask(p, op.sealAfter); break;
      case Kind::kWorkspace: break;  // once the view it copies is sealed (step 7)
    }
    if (!ok) return false;
  }
  // 6. Tmpfs mounts kept writable for the mount points inside them: sealed.
  for (const auto& op : plan.ops) {
    if (op.kind != Kind::kMask || !op.sealAfter || disabled(Layer::kReadMasks)) continue;
    Fd top(resolve(rootFd, op.path.c_str()));
    if (top.fd < 0) {
      if (errno == ENOENT) continue;
      error.add("openat2(newroot, ").quoted(op.path.c_str()).add(")");
      return error.fail(SetupStep::kMounts);
    }
    if (!setAttr(top.fd, op.path.c_str(), MOUNT_ATTR_RDONLY, false, error)) return false;
  }
  // 7. The workspace: a copy of its final view, every mount beneath it
  //    included, at /workspace -- made in the sandbox's own root (a tmpfs:
  //    nothing is created on the host).
  for (const auto& op : plan.ops) {
    if (op.kind != Kind::kWorkspace) continue;
    const char* p = op.path.c_str();
    Fd view(resolve(rootFd, op.target.c_str()));
    if (view.fd < 0) {
      error.add("openat2(newroot, ").quoted(op.target.c_str()).add(", RESOLVE_NO_SYMLINKS) (the workspace)");
      return error.fail(SetupStep::kMounts);
    }
    Fd tree(abi::openTree(view.fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH));
    if (tree.fd < 0) {
      error.add("open_tree(").quoted(op.target.c_str()).add(", OPEN_TREE_CLONE|AT_RECURSIVE) (the workspace)");
      return error.fail(SetupStep::kMounts);
    }
    Fd target(ensure(rootFd, p, true, error));
    if (target.fd < 0) return error.fail(SetupStep::kMounts);
    if (!attach(tree.fd, target.fd, p, error)) return false;
  }
  if (emptyRoot && !setAttr(rootFd, "/", MOUNT_ATTR_RDONLY, false, error)) return false;

  // 8. Pivot into the new root and drop the host tree.
  if (sys::fchdir(rootFd) != 0) {
    error.add("fchdir(\"/tmp/root\")");
    return error.fail(SetupStep::kMounts);
  }
  if (abi::pivotRoot(".", ".") != 0) {
    error.add("pivot_root(\".\", \".\")");
    return error.fail(SetupStep::kMounts);
  }
  if (sys::umount2(".", MNT_DETACH) != 0) {
    error.add("umount2(old root, MNT_DETACH)");
    return error.fail(SetupStep::kMounts);
  }
  if (sys::chdir("/") != 0) {
    error.add("chdir(\"/\")");
    return error.fail(SetupStep::kMounts);
  }
  return true;
}

}  // namespace stockade::platform
