// The write broker (write_broker.h). Runs in the supervisor, never in the
// child; allocates freely.
//
// Resolution in the child's view: the path is made absolute against the
// child's cwd or dirfd (their paths read from /proc/<tid>, checked with
// SECCOMP_IOCTL_NOTIF_ID_VALID afterwards: the call still waiting proves the
// tid still names the caller), and its parent directory is resolved from the
// child's root with RESOLVE_IN_ROOT. The directory reached is named by the
// kernel (/proc/self/fd of our descriptor: its path in the child's mount
// namespace), and it is that name the decision sees. A parent that lies
// lexically inside a tree, with no symlink, `.` or `..` on the way, is opened
// straight beneath the tree's descriptor (the fast path: the child's view
// there is the tree itself, read masks aside, which the decision knows).
// The child's names are its view's: beneath /workspace they name the
// workspace's host paths (WorkspaceMount::hostPath()), which is what every
// tree, rule and decision is written in; a relative symlink is followed in the
// child's view again (WorkspaceMount::sandboxPath()).
#include "platform/linux/write_broker.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "platform/linux/allocation_limit.h"
#include "platform/linux/kernel_abi.h"
#include "platform/mutation.h"
#include "policy/paths.h"

namespace stockade::platform {

namespace abi = linux_abi;
using policy::Effect;
using policy::ObjectKind;
using policy::WriteEffect;
using policy::WriteVerdict;

namespace {

constexpr int kMaxSymlinks = 40;  // the kernel's MAXSYMLINKS
constexpr std::uint64_t kValidOpenFlags = O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND | O_NONBLOCK |
                                          O_DSYNC | O_ASYNC | O_DIRECT | O_LARGEFILE | O_DIRECTORY | O_NOFOLLOW |
                                          O_NOATIME | O_CLOEXEC | O_PATH | O_SYNC | O_TMPFILE;
constexpr std::uint64_t kTmpfileBit = O_TMPFILE & ~O_DIRECTORY;

ObjectKind kindOfMode(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR: return ObjectKind::kDirectory;
    case S_IFLNK: return ObjectKind::kSymlink;
    case S_IFIFO:
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK: return ObjectKind::kSpecial;
    default: return ObjectKind::kOther;  // a regular file (mknod's 0 and invalid types: the kernel's error)
  }
}

ObjectKind kindOf(const struct stat& st) { return kindOfMode(st.st_mode); }

std::string selfFd(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Whether notification `id` still waits on `listener`: its caller has not
// died or been interrupted, so what was read of it is its own.
bool stillWaiting(int listener, std::uint64_t id) {
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

// The kernel's name for one of our descriptors: its path in the mount
// namespace it belongs to.
std::optional<std::string> nameOf(int fd) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(selfFd(fd).c_str(), buf, sizeof buf);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof buf || buf[0] != '/') return std::nullopt;
  return std::string(buf, static_cast<std::size_t>(n));
}

// openat2() confined to a root (RESOLVE_IN_ROOT, RESOLVE_BENEATH) refuses a
// ".." with EAGAIN when a rename anywhere on the system may have raced it;
// the answer is to ask again.
int openat2Confined(int dirfd, const char* path, std::uint64_t flags, std::uint64_t resolve) {
  int fd = -1;
  for (int attempt = 0; attempt < 64; ++attempt) {
    fd = abi::openat2(dirfd, path, flags, resolve);
    if (fd >= 0 || errno != EAGAIN) break;
  }
  return fd;
}

std::string join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (out.empty() || out.back() != '/') out += '/';
  out += name;
  return out;
}

// `path` relative to `root` (path within root); "" for root itself.
std::string_view relativeTo(std::string_view path, std::string_view root) {
  if (path.size() == root.size()) return {};
  return root == "/" ? path.substr(1) : path.substr(root.size() + 1);
}

// Set by WriteBroker::dedicateThisThread(): this thread only answers
// listeners, and the umask it has now (once it set one).
thread_local bool tDedicated = false;
thread_local std::optional<mode_t> tUmask;

// Everything the call does with the child's identity: its umask for modes,
// and no capability (a supervisor running as root still decides nothing by
// its own privilege: the child has none). Per thread: the file-system
// attributes (umask) are unshared from the rest of the supervisor once. A
// dedicated thread keeps what it set, and has no capability left to drop.
class ActingAsChild {
 public:
  explicit ActingAsChild(std::optional<mode_t> umaskOfChild) {
    static thread_local bool ownFs = ::unshare(CLONE_FS) == 0;
    if (umaskOfChild && ownFs) {
      if (!tDedicated) {
        savedUmask_ = ::umask(*umaskOfChild);
      } else if (tUmask != umaskOfChild) {
        ::umask(*umaskOfChild);
        tUmask = umaskOfChild;
      }
    }
    // The supervisor's capabilities do not change: read once per thread.
    static thread_local const Capabilities mine = [] {
      Capabilities c;
      c.header.version = _LINUX_CAPABILITY_VERSION_3;
      if (::syscall(SYS_capget, &c.header, c.data) != 0) c.data[0].effective = c.data[1].effective = 0;
      return c;
    }();
    mine_ = &mine;
    if ((mine.data[0].effective | mine.data[1].effective) != 0) {
      Capabilities none = mine;
      none.data[0].effective = none.data[1].effective = 0;
      dropped_ = ::syscall(SYS_capset, &none.header, none.data) == 0;
    }
  }
  ~ActingAsChild() {
    if (dropped_) {
      Capabilities restore = *mine_;
      ::syscall(SYS_capset, &restore.header, restore.data);
    }
    if (savedUmask_) ::umask(*savedUmask_);
  }
  ActingAsChild(const ActingAsChild&) = delete;
  ActingAsChild& operator=(const ActingAsChild&) = delete;

 private:
  struct Capabilities {
    __user_cap_header_struct header{};
    __user_cap_data_struct data[2]{};
  };
  const Capabilities* mine_ = nullptr;
  bool dropped_ = false;
  std::optional<mode_t> savedUmask_;
};

}  // namespace

// --- a name in a writable tree, opened on the host side ------------------

namespace {

struct Place {
  std::size_t tree = 0;
  // The parent directory, O_PATH, host side: `held`, or the tree's own
  // descriptor (borrowed) when the name is directly in the tree; none for a
  // tree's root.
  struct Parent {
    UniqueFd held;
    int fd = -1;
    int get() const { return fd; }
    explicit operator bool() const { return fd >= 0; }
  } parent;
  int treeFd = -1;   // the tree's descriptor (borrowed)
  std::string name;  // the last component; empty for a tree's root
  std::string path;  // on the host: the trees are bound where they are (and the workspace at /workspace too)
  ObjectKind kind = ObjectKind::kNone;
  struct stat st {};
  bool trailingSlash = false;  // spelt "name/": only a directory may be there, or be made

  bool isRoot() const { return !parent; }
  bool exists() const { return kind != ObjectKind::kNone; }
  // An O_PATH descriptor of the object at the name, not following a symlink.
  UniqueFd object() const {
    if (isRoot()) return UniqueFd(::fcntl(treeFd, F_DUPFD_CLOEXEC, 0));
    return UniqueFd(::openat(parent.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  }
};

enum class Found { kPlace, kNotBrokered, kError, kGone };

struct Resolution {
  Found found = Found::kNotBrokered;
  int error = 0;
  Place place;
};

Resolution notBrokered() { return {}; }
Resolution errorOf(int e) { return {Found::kError, e, {}}; }

// How a path argument names its object.
struct Name {
  int dirfd = AT_FDCWD;
  std::optional<std::string> path;  // nullopt: the object is `dirfd` itself (fchmod, AT_EMPTY_PATH)
  bool follow = false;              // a symlink at the name is followed
  // A last component "." or ".." names the directory itself (chmod, utimes,
  // O_TMPFILE); for calls that make or remove names it is the kernel's error.
  bool dotIsObject = false;
  // The call makes or removes this name (mkdir, mknod, symlink, link's new
  // name, unlink, rmdir, rename; an O_CREAT open): a trailing slash does not
  // follow a symlink at its last component -- the kernel acts on (or
  // refuses) the symlink itself. Every other call looks the object up, and a
  // trailing slash follows it.
  bool entry = false;
};

// A magic link of the caller's own, however it is spelt: in the sandbox's
// /proc -- /proc/self, /proc/thread-self, /proc/<its pid>, /proc/<pid>/task/
// <its tid> (numbers in the sandbox's pid namespace), then cwd, root or fd/N --
// or /dev/fd/N, /dev/stdin, /dev/stdout, /dev/stderr (links into it). The
// broker cannot follow these from outside the sandbox's pid namespace; it
// reads the link of the caller's task instead. A magic link of another
// process is not one of these: the kernel's (the view is read-only there).
struct OwnLink {
  std::string what;     // "cwd", "root" or "fd/N"
  bool thread = false;  // the calling thread's own; else its thread group's
  int fd = -1;          // N of "fd/N"
  std::string rest;     // what follows: "" or "/..."
};

// The caller's ids: its thread group's on the host, its own in the sandbox.
struct CallerIds {
  pid_t hostTgid = 0, tgid = 0, tid = 0;
};

std::optional<int> decimal(std::string_view text) {
  if (text.empty() || text.size() > 9 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  int n = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    n = n * 10 + (ch - '0');
  }
  return n;
}

// `ids` is asked only when a number is to be compared with the caller's.
template <typename Ids>
std::optional<OwnLink> ownLink(std::string_view path, Ids&& ids) {
  if (path.find("proc") == std::string_view::npos && path.find("dev") == std::string_view::npos) return std::nullopt;
  // The components with their ends, "" and "." dropped as the walk drops them.
  std::vector<std::pair<std::string_view, std::size_t>> parts;
  for (std::size_t i = 0; i < path.size() && parts.size() < 7;) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (std::string_view part = path.substr(i, j - i); !part.empty() && part != ".") parts.emplace_back(part, j);
    i = j + 1;
  }
  if (path.empty() || path.front() != '/' || parts.size() < 2) return std::nullopt;
  OwnLink link;
  auto rest = [&](std::size_t last) {
    link.rest = std::string(path.substr(parts[last].second));
    return link;
  };
  auto fdAt = [&](std::size_t i) -> std::optional<OwnLink> {
    if (i + 1 >= parts.size() || parts[i].first != "fd") return std::nullopt;
    auto n = decimal(parts[i + 1].first);
    if (!n) return std::nullopt;
    link.fd = *n;
    link.what = "fd/" + std::to_string(*n);
    return rest(i + 1);
  };
  if (parts[0].first == "dev") {
    for (auto [name, number] : {std::pair<std::string_view, int>{"stdin", 0}, {"stdout", 1}, {"stderr", 2}})
      if (parts[1].first == name) {
        link.fd = number;
        link.what = "fd/" + std::to_string(number);
        return rest(1);
      }
    return fdAt(1);
  }
  if (parts[0].first != "proc") return std::nullopt;
  std::size_t i = 2;
  const std::string_view who = parts[1].first;
  if (who == "thread-self") {
    link.thread = true;
  } else if (who != "self") {
    auto n = decimal(who);
    const auto caller = n ? ids() : std::nullopt;
    if (!caller || (*n != caller->tgid && *n != caller->tid)) return std::nullopt;
    link.thread = *n != caller->tgid;
  }
  if (!link.thread && i + 1 < parts.size() && parts[i].first == "task") {
    auto n = decimal(parts[i + 1].first);
    const auto caller = n ? ids() : std::nullopt;
    if (!caller || *n != caller->tid) return std::nullopt;
    link.thread = true;
    i += 2;
  }
  if (i >= parts.size()) return std::nullopt;
  if (parts[i].first == "cwd" || parts[i].first == "root") {
    link.what = std::string(parts[i].first);
    return rest(i);
  }
  return fdAt(i);
}
}  // namespace

// The call being answered: its arguments, the child's memory and view.
class BrokeredCallHandler {
 public:
  BrokeredCallHandler(const WriteBroker& broker, int listener, const seccomp_notif& n, const BrokeredCall& spec)
      : b_(broker), listener_(listener), n_(n), spec_(spec), tid_(static_cast<pid_t>(n.pid)) {}

  WriteBroker::Answer run();

 private:
  using Answer = WriteBroker::Answer;

  std::uint64_t arg(std::int8_t i) const { return i < 0 ? 0 : n_.data.args[i]; }
  int intArg(std::int8_t i) const { return static_cast<int>(static_cast<std::int32_t>(arg(i))); }
  bool valid() const { return stillWaiting(listener_, n_.id); }

  // --- the child's memory -------------------------------------------------
  enum class Read { kOk, kFault, kTooLong, kGone };
  Read readBytes(std::uint64_t address, void* out, std::size_t size) const;
  Read readString(std::uint64_t address, std::size_t max, std::string& out) const;
  std::optional<std::string> procLink(const std::string& what) const;
  // The caller's ids (its /proc status, read once per call when asked).
  std::optional<CallerIds> callerIds() const;
  // What the caller's own magic link names now: the path of its cwd, root or
  // descriptor in its view, `link.rest` appended; nullopt when it names no
  // path (a pipe, a deleted file) or the call is gone.
  std::optional<std::string> throughOwnLink(const OwnLink& link) const;
  // `path` with every leading magic link of the caller's own replaced by
  // what it names (a path through /proc/self/root/proc/self/cwd is two);
  // nullopt when one names no path. `follow`: a link that is the whole path
  // is followed (else it is the name itself, which is the kernel's).
  std::optional<std::string> withoutOwnLinks(std::string path, bool follow) const;
  std::optional<mode_t> childUmask() const;

  // --- resolution ------------------------------------------------------------
  Resolution resolve(const Name& name) const;
  Resolution resolveObject(int fd) const;
  // True for a descriptor the broker handed out: its file is on the host's
  // mount of a tree, not the sandbox's read-only view of it.
  bool issuedByBroker(int fd) const;
  Resolution place(std::string_view parentPath, std::string_view last, bool trailingSlash, bool follow,
                   int depth) const;
  // The directory `path` names in the child's view, walked one component at
  // a time (symlinks read here, the caller's own magic links replaced on the
  // way): where the kernel's walk from the broker stops at one (ELOOP, or
  // ENOENT at /proc/self, which names no process of the broker's). nullopt
  // where the walk fails or meets another process's magic link: the kernel's.
  std::optional<std::string> walkInView(std::string path, int depth) const;
  // The rest of a walk that met a symlink whose text is `next`, in the
  // directory `linkParent` (the child's view).
  Resolution followLink(std::string next, std::string_view linkParent, bool trailingSlash, bool follow,
                        int depth) const;
  // `target`: absolute and lexically normal, in tree `tree`.
  Resolution hostPlace(std::size_t tree, const std::string& target) const;

  // The decision, with what the broker finds in the directories it depends on.
  // `places`: the names the call acts on, their parents pinned. A directory
  // whose contents the decision asks about is looked at through them (the
  // parent itself, or its ancestors by ".."): the directory the call will
  // change, even if another sandbox on the same tree renames it meanwhile.
  using Places = std::initializer_list<const Place*>;
  WriteVerdict decide(const std::vector<WriteEffect>& effects, std::optional<std::uint32_t> mode = std::nullopt,
                      Places places = {}) const;
  policy::GitDirContents gitDirContents(const std::string& dir, Places places) const;

  // --- answers -------------------------------------------------------------
  static Answer cont() { return Answer{Answer::Kind::kContinue}; }
  static Answer value(long long v) { return Answer{Answer::Kind::kValue, v}; }
  static Answer error(int e) { return Answer{Answer::Kind::kError, 0, e}; }
  static Answer result(long rc) { return rc < 0 ? error(errno) : value(rc); }
  static Answer goneAnswer() { return Answer{Answer::Kind::kGone}; }
  // The answer for a resolution that is not a place.
  static Answer notAPlace(const Resolution& r) {
    switch (r.found) {
      case Found::kError: return error(r.error);
      case Found::kGone: return goneAnswer();
      default: return cont();
    }
  }
  // kRefuse/kFail: the answer, and the denial to audit.
  Answer verdictAnswer(const WriteVerdict& v, const std::string& operation, const std::string& given,
                       const std::string& given2) const;

  // Reads a path argument: nullopt with `answer` set when it cannot be read.
  std::optional<Name> pathArg(std::int8_t dirfdIndex, std::int8_t pathIndex, bool follow, Answer& answer,
                              bool emptyIsObject = false, bool dotIsObject = false) const;
  // The call's path argument (its dirfd and path) and the place it names in
  // a brokered tree; or the answer when it names none: the argument
  // unreadable, the kernel's (not brokered), gone, an error.
  struct Named {
    Name name;
    Resolution resolution;
  };
  std::variant<Named, Answer> placeArg(bool follow, bool emptyIsObject = false, bool dotIsObject = false,
                                       bool entry = false) const;
  // The name a call makes or removes (Name::entry), placed.
  std::variant<Named, Answer> entryArg() const { return placeArg(false, false, false, true); }
  // The decision on `effects`: nullopt when the broker performs them;
  // otherwise the answer -- the kernel's (not brokered), or the refusal,
  // audited as `operation` on the names the child gave.
  std::optional<Answer> unlessPerformed(const std::vector<WriteEffect>& effects, const std::string& operation,
                                        const std::string& given, const std::string& given2 = "",
                                        std::optional<std::uint32_t> mode = std::nullopt, Places places = {}) const;

  Answer open(std::uint64_t flags, std::uint64_t mode, bool strict, std::uint64_t resolveFlags = 0);
  // openat2()'s resolve restrictions: the walk to the parent done as the
  // child asked (from its dirfd, with its flags), then placed as usual.
  Resolution resolveRestricted(const Name& name, std::uint64_t resolveFlags, bool& followFinal, int depth = 0) const;
  Answer openHow();
  Answer mknod(bool directory);
  Answer symlink();
  Answer link();
  Answer rename();
  Answer unlink(bool directory);
  Answer truncate();
  Answer metadata();
  Answer access();

  const WriteBroker& b_;
  int listener_;
  const seccomp_notif& n_;
  const BrokeredCall& spec_;
  pid_t tid_;
  mutable std::optional<std::optional<CallerIds>> callerIds_;
};

BrokeredCallHandler::Read BrokeredCallHandler::readBytes(std::uint64_t address, void* out, std::size_t size) const {
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  ssize_t n = ::process_vm_readv(tid_, &local, 1, &remote, 1, 0);
  if (!valid()) return Read::kGone;
  return n == static_cast<ssize_t>(size) ? Read::kOk : Read::kFault;
}

BrokeredCallHandler::Read BrokeredCallHandler::readString(std::uint64_t address, std::size_t max,
                                                          std::string& out) const {
  out.clear();
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  char chunk[4096];
  while (out.size() < max) {
    // Never across a page boundary: the next page may be unmapped.
    std::size_t want = std::min({page - (address % page), sizeof chunk, max - out.size()});
    iovec local{chunk, want};
    iovec remote{reinterpret_cast<void*>(address), want};
    ssize_t n = ::process_vm_readv(tid_, &local, 1, &remote, 1, 0);
    if (n <= 0) return valid() ? Read::kFault : Read::kGone;
    const char* nul = static_cast<const char*>(std::memchr(chunk, '\0', static_cast<std::size_t>(n)));
    if (nul) {
      out.append(chunk, static_cast<std::size_t>(nul - chunk));
      return valid() ? Read::kOk : Read::kGone;
    }
    out.append(chunk, static_cast<std::size_t>(n));
    address += static_cast<std::uint64_t>(n);
  }
  return valid() ? Read::kTooLong : Read::kGone;
}

std::optional<std::string> BrokeredCallHandler::procLink(const std::string& what) const {
  char buf[PATH_MAX];
  std::string link = "/proc/" + std::to_string(tid_) + "/" + what;
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  // Only while the call waits does the tid name the caller.
  if (!valid() || n <= 0 || static_cast<std::size_t>(n) >= sizeof buf) return std::nullopt;
  return std::string(buf, static_cast<std::size_t>(n));
}

std::optional<CallerIds> BrokeredCallHandler::callerIds() const {
  if (callerIds_) return *callerIds_;
  callerIds_.emplace();
  UniqueFd status(::open(("/proc/" + std::to_string(tid_) + "/status").c_str(), O_RDONLY | O_CLOEXEC));
  char buf[4096];
  ssize_t n = status ? ::read(status.get(), buf, sizeof buf - 1) : -1;
  if (n <= 0 || !valid()) return std::nullopt;
  buf[n] = '\0';
  // "Tgid:\t<host>", "NStgid:\t<host>...\t<sandbox>", "NSpid:\t<host>...\t<sandbox>": the last is the innermost.
  auto field = [&](const char* key, bool last) -> pid_t {
    const char* at = std::strstr(buf, key);
    if (!at) return 0;
    std::string_view line(at + std::strlen(key));
    line = line.substr(0, line.find('\n'));
    line = line.substr(last ? line.find_last_of('\t') + 1 : line.find_first_not_of('\t'));
    auto v = decimal(line);
    return v ? static_cast<pid_t>(*v) : 0;
  };
  CallerIds ids{field("\nTgid:", false), field("\nNStgid:", true), field("\nNSpid:", true)};
  if (ids.hostTgid > 0 && ids.tgid > 0 && ids.tid > 0) callerIds_->emplace(ids);
  return *callerIds_;
}

std::optional<std::string> BrokeredCallHandler::throughOwnLink(const OwnLink& link) const {
  std::optional<std::string> held;
  if (link.thread) {
    held = procLink(link.what);
  } else {
    auto ids = callerIds();
    if (!ids) return std::nullopt;
    char buf[PATH_MAX];
    const std::string at = "/proc/" + std::to_string(ids->hostTgid) + "/" + link.what;
    ssize_t n = ::readlink(at.c_str(), buf, sizeof buf);
    if (!valid() || n <= 0 || static_cast<std::size_t>(n) >= sizeof buf) return std::nullopt;
    held.emplace(buf, static_cast<std::size_t>(n));
  }
  if (!held || held->front() != '/' || held->ends_with(" (deleted)")) return std::nullopt;
  if (*held == "/" && !link.rest.empty()) return link.rest;
  return *held + link.rest;
}

std::optional<std::string> BrokeredCallHandler::withoutOwnLinks(std::string path, bool follow) const {
  for (int depth = 0; depth < kMaxSymlinks; ++depth) {
    auto link = ownLink(path, [this] { return callerIds(); });
    if (!link) return path;
    if (link->rest.empty() && !follow) return std::nullopt;  // the magic link itself
    auto next = throughOwnLink(*link);
    if (!next) return std::nullopt;
    path = std::move(*next);
  }
  return std::nullopt;
}

std::optional<mode_t> BrokeredCallHandler::childUmask() const {
  // Until a program in the sandbox calls umask(2) (trapped: kUmask), every
  // one has the umask the program started with, read once.
  const bool changed = b_.umaskChanged_.load();
  if (int known = b_.startUmask_.load(); !changed && known >= 0) return static_cast<mode_t>(known);
  {
    std::lock_guard lock(b_.umaskLock_);
    const auto& setter = b_.umaskSetter_;
    if (setter.tid == tid_ && setter.pidfd && abi::pidfdSendSignal(setter.pidfd.get(), 0) == 0) return setter.mask;
  }
  UniqueFd status(::open(("/proc/" + std::to_string(tid_) + "/status").c_str(), O_RDONLY | O_CLOEXEC));
  if (!status) return std::nullopt;
  char buf[4096];
  ssize_t n = ::read(status.get(), buf, sizeof buf - 1);
  if (n <= 0 || !valid()) return std::nullopt;
  buf[n] = '\0';
  const char* at = std::strstr(buf, "\nUmask:");
  if (!at) return std::nullopt;
  const auto umask = static_cast<mode_t>(std::strtoul(at + 7, nullptr, 8) & 0777);
  if (!changed) b_.startUmask_.store(static_cast<int>(umask));
  return umask;
}

std::optional<Name> BrokeredCallHandler::pathArg(std::int8_t dirfdIndex, std::int8_t pathIndex, bool follow,
                                                 Answer& answer, bool emptyIsObject, bool dotIsObject) const {
  Name name;
  name.dirfd = dirfdIndex >= 0 ? intArg(dirfdIndex) : AT_FDCWD;
  name.follow = follow;
  name.dotIsObject = dotIsObject;
  if (pathIndex < 0 || arg(pathIndex) == 0) {
    if (pathIndex >= 0 && spec_.kind != BrokeredKind::kUtimens) {
      answer = cont();  // a NULL path: the kernel's EFAULT
      return std::nullopt;
    }
    return name;  // the object is dirfd itself
  }
  std::string text;
  switch (readString(arg(pathIndex), PATH_MAX, text)) {
    case Read::kOk: break;
    case Read::kGone: answer = goneAnswer(); return std::nullopt;
    default: answer = cont(); return std::nullopt;  // EFAULT or ENAMETOOLONG: the kernel's to say
  }
  if (text.empty() && emptyIsObject) return name;
  name.path = std::move(text);
  return name;
}

// --- resolution ---------------------------------------------------------------

Resolution BrokeredCallHandler::hostPlace(std::size_t tree, const std::string& target) const {
  Place p;
  p.tree = tree;
  p.treeFd = b_.treeFds_[tree].get();
  if (p.treeFd < 0) return notBrokered();  // the tree does not exist: nothing in it to write
  const std::string& root = b_.trees()[tree];
  p.path = target;
  if (target == root) {
    if (::fstat(p.treeFd, &p.st) != 0) return errorOf(errno);
    p.kind = kindOf(p.st);
    return {Found::kPlace, 0, std::move(p)};
  }
  const std::size_t cut = target.rfind('/');
  const std::string_view parent = cut == 0 ? std::string_view("/") : std::string_view(target).substr(0, cut);
  const std::string rel(relativeTo(parent, root));
  if (rel.empty()) {
    p.parent.fd = p.treeFd;
  } else {
    p.parent.held.reset(openat2Confined(p.treeFd, rel.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                                        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    p.parent.fd = p.parent.held.get();
  }
  if (!p.parent) return notBrokered();  // changed under us: the kernel decides, in the child's view
  p.name = target.substr(cut + 1);
  if (::fstatat(p.parent.get(), p.name.c_str(), &p.st, AT_SYMLINK_NOFOLLOW) == 0) {
    p.kind = kindOf(p.st);
  } else if (errno != ENOENT) {
    return errorOf(errno);
  }
  return {Found::kPlace, 0, std::move(p)};
}

Resolution BrokeredCallHandler::place(std::string_view parentPath, std::string_view last, bool trailingSlash,
                                      bool follow, int depth) const {
  // The fast path: a parent lexically inside a tree, spelt without `.`,
  // `..` or symlinks, is the tree's own directory.
  std::optional<Resolution> found;
  const std::string hostParent = b_.workspace_.hostPath(parentPath);
  if (auto tree = b_.rules_.treeOf(hostParent)) {
    std::string_view rel = relativeTo(hostParent, b_.trees()[*tree]);
    bool plain = true;
    for (auto part : policy::pathComponents(rel)) plain = plain && part != "." && part != "..";
    if (plain && policy::lexicallyNormal(parentPath) == parentPath) {
      Resolution r = hostPlace(*tree, join(hostParent, last));
      if (r.found == Found::kPlace) found = std::move(r);
    }
  }
  if (!found) {
    // In the child's view: from its root, as the kernel would walk it.
    UniqueFd dir(openat2Confined(b_.root_.get(), std::string(parentPath).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                              RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS));
    if (!dir && (errno == ELOOP || errno == ENOENT)) {
      // A magic link on the way (a symlink to /proc/self/cwd): walked here.
      auto walked = walkInView(std::string(parentPath), depth);
      if (walked)
        dir.reset(openat2Confined(b_.root_.get(), walked->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                                  RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    }
    if (!dir) return notBrokered();  // ENOENT, ELOOP, another's magic link...: the kernel's to say
    auto real = nameOf(dir.get());
    if (!real) return notBrokered();
    std::string target = join(b_.workspace_.hostPath(*real), last);
    auto tree = b_.rules_.treeOf(target);
    if (!tree) {
      // A symlink outside every tree (in the private /tmp) may lead into
      // one, dangling or not: followed as the call would follow it. (Not in
      // /proc, whose links are magic: the kernel's.)
      if (!follow || policy::isWithin(*real, "/proc")) return notBrokered();
      if (depth >= kMaxSymlinks) return errorOf(ELOOP);
      char text[PATH_MAX];
      ssize_t n = ::readlinkat(dir.get(), std::string(last).c_str(), text, sizeof text);
      if (n <= 0 || static_cast<std::size_t>(n) >= sizeof text) return notBrokered();  // no symlink: the kernel's
      return followLink(std::string(text, static_cast<std::size_t>(n)), *real, trailingSlash, follow, depth);
    }
    Resolution r = hostPlace(*tree, target);
    if (r.found != Found::kPlace) return r;
    found = std::move(r);
  }
  Place& p = found->place;
  if (!p.isRoot() && follow && p.exists() && S_ISLNK(p.st.st_mode)) {
    if (depth >= kMaxSymlinks) return errorOf(ELOOP);
    char target[PATH_MAX];
    ssize_t n = ::readlinkat(p.parent.get(), p.name.c_str(), target, sizeof target);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof target) return notBrokered();
    return followLink(std::string(target, static_cast<std::size_t>(n)),
                      b_.workspace_.sandboxPath(std::string_view(p.path).substr(0, p.path.size() - p.name.size() - 1)),
                      trailingSlash, follow, depth);
  }
  // A looked-up object named with a trailing slash must be a directory;
  // a name made or removed is the call's to judge (EEXIST, ENOTDIR).
  if (follow && trailingSlash && p.exists() && p.kind != ObjectKind::kDirectory) return errorOf(ENOTDIR);
  p.trailingSlash = trailingSlash;
  return std::move(*found);
}

std::optional<std::string> BrokeredCallHandler::walkInView(std::string path, int depth) const {
  std::string done;  // the directories walked, no symlink among them ("" for the root)
  std::size_t at = 0;
  // The supervisor's work for one call stays bounded: each step opens the
  // path so far from the root, and 40 symlinks each naming "x/../" 800 times
  // had it open 4,096 of them for one call (35 ms, against 6 ms for the
  // kernel's own walk of it). Past 256 components walked, or a path longer
  // than PATH_MAX, the call is the kernel's (EROFS in the read-only view).
  int steps = 0;
  constexpr int kMaxSteps = 256;
  while (at < path.size()) {
    if (++steps > kMaxSteps || path.size() > PATH_MAX) return std::nullopt;
    std::size_t next = path.find('/', at);
    if (next == std::string::npos) next = path.size();
    const std::string part = path.substr(at, next - at);
    at = next + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      done.resize(done.empty() ? 0 : done.rfind('/'));
      continue;
    }
    const std::string here = done + "/" + part;
    UniqueFd fd(openat2Confined(b_.root_.get(), here.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC,
                                RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) return std::nullopt;
    if (S_ISDIR(st.st_mode)) {
      done = here;
      continue;
    }
    // /proc's links are magic; the caller's own were replaced already.
    if (!S_ISLNK(st.st_mode) || policy::isWithin(here, "/proc") || ++depth > kMaxSymlinks) return std::nullopt;
    char text[PATH_MAX];
    ssize_t n = ::readlinkat(fd.get(), "", text, sizeof text);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof text) return std::nullopt;
    std::string target(text, static_cast<std::size_t>(n));
    if (target.front() != '/') target = done + "/" + target;
    if (at < path.size()) target += "/" + path.substr(at);
    auto plain = withoutOwnLinks(std::move(target), true);
    if (!plain) return std::nullopt;
    path = std::move(*plain);
    done.clear();
    at = 0;
  }
  return done.empty() ? "/" : done;
}

Resolution BrokeredCallHandler::followLink(std::string next, std::string_view linkParent, bool trailingSlash,
                                           bool follow, int depth) const {
  if (next.front() != '/') next = join(linkParent, next);
  // A symlink to the caller's own magic link (/proc/self/cwd/...) leads where it does.
  auto plain = withoutOwnLinks(std::move(next), true);
  if (!plain) return notBrokered();
  next = std::move(*plain);
  std::size_t end = next.find_last_not_of('/');
  bool slash = trailingSlash || end + 1 != next.size();
  if (end == std::string::npos) return notBrokered();  // "/": the kernel's
  next.resize(end + 1);
  std::size_t cut = next.rfind('/');
  std::string nextLast = next.substr(cut + 1);
  if (nextLast == "." || nextLast == "..") return notBrokered();
  return place(cut == 0 ? "/" : std::string_view(next).substr(0, cut), nextLast, slash, follow, depth + 1);
}

Resolution BrokeredCallHandler::resolveObject(int fd) const {
  const std::string held = fd == AT_FDCWD ? std::string("cwd") : "fd/" + std::to_string(fd);
  auto path = procLink(held);
  if (!path || path->front() != '/' || path->ends_with(" (deleted)")) return notBrokered();
  const std::string host = b_.workspace_.hostPath(policy::lexicallyNormal(*path));
  auto tree = b_.rules_.treeOf(host);
  if (!tree) return notBrokered();
  Resolution r = hostPlace(*tree, host);
  if (r.found != Found::kPlace) return r;
  // The name must still be the object the child holds.
  struct stat st {};
  if (::stat(("/proc/" + std::to_string(tid_) + "/" + held).c_str(), &st) != 0 || !valid() || !r.place.exists() ||
      st.st_dev != r.place.st.st_dev || st.st_ino != r.place.st.st_ino)
    return notBrokered();
  return r;
}

bool BrokeredCallHandler::issuedByBroker(int fd) const {
  const std::string held = "/proc/" + std::to_string(tid_) + "/fd/" + std::to_string(fd);
  struct statx sx {};
  return ::statx(AT_FDCWD, held.c_str(), AT_STATX_SYNC_AS_STAT, STATX_MNT_ID, &sx) == 0 && valid() &&
         (sx.stx_mask & STATX_MNT_ID) &&
         std::find(b_.hostMounts_.begin(), b_.hostMounts_.end(), sx.stx_mnt_id) != b_.hostMounts_.end();
}

Resolution BrokeredCallHandler::resolve(const Name& name) const {
  if (!b_.root_) return errorOf(EPERM);  // not attached: fail closed
  if (!name.path) return resolveObject(name.dirfd);
  const std::string& given = *name.path;
  if (given.empty()) return errorOf(ENOENT);  // as the kernel answers "" (a rename's or link's too, not EXDEV)
  std::string abs;
  if (given.front() == '/') {
    abs = given;
  } else {
    auto base = procLink(name.dirfd == AT_FDCWD ? std::string("cwd") : "fd/" + std::to_string(name.dirfd));
    if (!base || base->front() != '/' || base->ends_with(" (deleted)")) return notBrokered();
    abs = join(*base, given);
  }
  // The object behind the caller's own magic links (its cwd, root or a
  // descriptor, through /proc or /dev/fd), by the name it has now.
  auto plain = withoutOwnLinks(std::move(abs), name.follow);
  if (!plain) return notBrokered();  // the link itself, or no path: the kernel's
  abs = std::move(*plain);
  std::size_t end = abs.find_last_not_of('/');
  if (end == std::string::npos) return notBrokered();  // "/" itself
  bool trailingSlash = end + 1 != abs.size();
  abs.resize(end + 1);
  std::size_t cut = abs.rfind('/');
  std::string last = abs.substr(cut + 1);
  if (last == "." || last == "..") {
    if (!name.dotIsObject) return notBrokered();
    UniqueFd dir(openat2Confined(b_.root_.get(), abs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                              RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS));
    auto real = dir ? nameOf(dir.get()) : std::nullopt;
    if (!real) return notBrokered();
    const std::string host = b_.workspace_.hostPath(*real);
    auto tree = b_.rules_.treeOf(host);
    if (!tree) return notBrokered();
    return hostPlace(*tree, host);
  }
  // Duplicate slashes and `.` components dropped, so the fast path sees a
  // plain spelling: the kernel's walk of "a/./b" is the walk of "a/b" (each
  // component must still be a searchable directory, which the walk from the
  // tree checks as well). `..` stays: it is not lexical once a symlink is on
  // the way, and the slow path resolves it. tar names every file it extracts
  // "./dir/file" from its dirfd: this keeps it off the slow path's second walk.
  std::string collapsed;
  for (std::size_t at = 0; at < cut;) {
    std::size_t next = abs.find('/', at);
    if (next == std::string::npos || next > cut) next = cut;
    std::string_view part = std::string_view(abs).substr(at, next - at);
    if (!part.empty() && part != ".") {
      collapsed += '/';
      collapsed += part;
    }
    at = next + 1;
  }
  if (collapsed.empty()) collapsed = "/";
  return place(collapsed, last, trailingSlash, name.follow || (trailingSlash && !name.entry), 0);
}

policy::GitDirContents BrokeredCallHandler::gitDirContents(const std::string& dir, Places places) const {
  policy::GitDirContents c;
  auto tree = b_.rules_.treeOf(dir);
  if (!tree || b_.treeFds_[*tree].get() < 0) return c;
  UniqueFd held;
  // Through a pinned parent: the directory itself, or the ancestor as many
  // ".." above it as the names say.
  for (const Place* p : places) {
    if (!p || !p->parent || p->tree != *tree) continue;
    const std::size_t cut = p->path.size() - p->name.size() - 1;
    const std::string parent = cut == 0 ? "/" : p->path.substr(0, cut);
    if (!policy::isWithin(parent, dir)) continue;
    std::string up = ".";
    for (std::size_t n = policy::pathComponents(relativeTo(parent, dir)).size(); n > 0; --n) up += "/..";
    held.reset(::openat(p->parent.get(), up.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    break;
  }
  if (!held) {
    const int treeFd = b_.treeFds_[*tree].get();
    std::string rel(relativeTo(dir, b_.trees()[*tree]));
    held.reset(rel.empty() ? ::fcntl(treeFd, F_DUPFD_CLOEXEC, 0)
                           : openat2Confined(treeFd, rel.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                                             RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
  }
  if (!held) return c;
  // Any kind of entry counts (GitDirContents): git follows a symlink at
  // objects or refs, and takes an executable file there.
  auto has = [&](const char* name) {
    struct stat st;
    return ::fstatat(held.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0;
  };
  c.head = has("HEAD");
  c.objects = has("objects");
  c.refs = has("refs");
  c.commondir = has("commondir");
  for (const char* name : {"config", "config.worktree", "hooks", "info", "commondir"})
    c.configuration = c.configuration || has(name);
  return c;
}

WriteVerdict BrokeredCallHandler::decide(const std::vector<WriteEffect>& effects, std::optional<std::uint32_t> mode,
                                         Places places) const {
  std::map<std::string, policy::GitDirContents> contents;
  for (const auto& dir : b_.rules_.gitDirCandidates(effects)) contents.emplace(dir, gitDirContents(dir, places));
  WriteVerdict v = b_.rules_.decide(effects, mode, contents);
  if (v.action == WriteVerdict::Action::kRefuse && mutation::disabled(mutation::Layer::kWriteBroker)) {
    // scripts/mutate: the broker performs what the rules refuse.
    if (auto tree = b_.rules_.treeOf(effects.front().path)) {
      v = WriteVerdict{};
      v.action = WriteVerdict::Action::kPerform;
      v.tree = *tree;
    }
  }
  return v;
}

// --- answers ----------------------------------------------------------------

WriteBroker::Answer BrokeredCallHandler::verdictAnswer(const WriteVerdict& v, const std::string& operation,
                                                       const std::string& given, const std::string& given2) const {
  Answer a = error(v.error);
  if (v.action != WriteVerdict::Action::kRefuse) return a;
  SeccompDenial d;
  d.pid = tid_;
  d.syscall = spec_.syscall;
  std::copy(std::begin(n_.data.args), std::end(n_.data.args), d.args.begin());
  d.error = v.error;
  d.operation = operation;
  d.path = given;
  d.path2 = given2;
  d.resolvedPath = v.path;
  d.rule = v.rule;
  d.reason = v.reason;
  a.denial = std::move(d);
  return a;
}

std::variant<BrokeredCallHandler::Named, WriteBroker::Answer> BrokeredCallHandler::placeArg(bool follow,
                                                                                           bool emptyIsObject,
                                                                                           bool dotIsObject,
                                                                                           bool entry) const {
  Answer answer;
  auto name = pathArg(spec_.args.dirfd, spec_.args.path, follow, answer, emptyIsObject, dotIsObject);
  if (!name) return answer;
  name->entry = entry;
  Resolution r = resolve(*name);
  if (r.found != Found::kPlace) return notAPlace(r);
  return Named{std::move(*name), std::move(r)};
}

std::optional<WriteBroker::Answer> BrokeredCallHandler::unlessPerformed(const std::vector<WriteEffect>& effects,
                                                                        const std::string& operation,
                                                                        const std::string& given,
                                                                        const std::string& given2,
                                                                        std::optional<std::uint32_t> mode,
                                                                        Places places) const {
  const WriteVerdict v = decide(effects, mode, places);
  if (v.action == WriteVerdict::Action::kNotBrokered) return cont();
  if (v.action != WriteVerdict::Action::kPerform) return verdictAnswer(v, operation, given, given2);
  return std::nullopt;
}

WriteBroker::Answer BrokeredCallHandler::run() {
  switch (spec_.kind) {
    case BrokeredKind::kOpen: {
      std::uint64_t flags = (spec_.args.flags >= 0 ? arg(spec_.args.flags) : 0) | spec_.impliedFlags;
      return open(flags & 0xffffffffULL, spec_.args.mode >= 0 ? arg(spec_.args.mode) : 0, false);
    }
    case BrokeredKind::kOpenHow: return openHow();
    case BrokeredKind::kMkdir: return mknod(true);
    case BrokeredKind::kMknod: return mknod(false);
    case BrokeredKind::kSymlink: return symlink();
    case BrokeredKind::kLink: return link();
    case BrokeredKind::kRename: return rename();
    case BrokeredKind::kUnlink: return unlink((intArg(spec_.args.flags) & AT_REMOVEDIR) != 0);
    case BrokeredKind::kRmdir: return unlink(true);
    case BrokeredKind::kTruncate: return truncate();
    case BrokeredKind::kChmod:
    case BrokeredKind::kChown:
    case BrokeredKind::kUtime:
    case BrokeredKind::kUtimes:
    case BrokeredKind::kUtimens:
    case BrokeredKind::kSetXattr:
    case BrokeredKind::kSetXattrArgs:
    case BrokeredKind::kRemoveXattr: return metadata();
    case BrokeredKind::kAccess: return access();
    case BrokeredKind::kUmask: {
      b_.umaskChanged_.store(true);  // from now on, each create reads its caller's
      // ... except this thread's, which is what it sets now (the call is
      // continued and cannot fail): known while its pidfd lives.
      UniqueFd pidfd(abi::pidfdOpen(tid_, PIDFD_THREAD));
      if (!pidfd) pidfd.reset(abi::pidfdOpen(tid_, 0));  // before Linux 6.9: only a thread group's leader
      std::lock_guard lock(b_.umaskLock_);
      b_.umaskSetter_ = {};
      if (pidfd && valid()) b_.umaskSetter_ = {tid_, std::move(pidfd), static_cast<mode_t>(arg(0) & 0777)};
      return cont();
    }
  }
  return error(EPERM);
}

Resolution BrokeredCallHandler::resolveRestricted(const Name& name, std::uint64_t resolveFlags, bool& followFinal,
                                                  int depth) const {
  if (!b_.root_) return errorOf(EPERM);
  if (!name.path || name.path->empty()) return notBrokered();
  const std::string& given = *name.path;
  const bool confined = resolveFlags & (RESOLVE_BENEATH | RESOLVE_IN_ROOT);
  // Where the walk starts: the child's dirfd (or cwd); an absolute path
  // that is not confined to it starts at the child's root.
  UniqueFd start;
  std::uint64_t walk = resolveFlags | RESOLVE_NO_MAGICLINKS;
  if (given.front() == '/' && !confined) {
    start.reset(::fcntl(b_.root_.get(), F_DUPFD_CLOEXEC, 0));
    walk |= RESOLVE_IN_ROOT;
  } else {
    const std::string held = "/proc/" + std::to_string(tid_) +
                             (name.dirfd == AT_FDCWD ? std::string("/cwd") : "/fd/" + std::to_string(name.dirfd));
    start.reset(::open(held.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!valid()) return {Found::kGone, 0, {}};
  }
  if (!start) return notBrokered();  // EBADF, ENOTDIR: the kernel's
  std::string path = given;
  std::size_t end = path.find_last_not_of('/');
  if (end == std::string::npos) return notBrokered();
  const bool trailingSlash = end + 1 != path.size();
  path.resize(end + 1);
  const std::size_t cut = path.rfind('/');
  const std::string last = cut == std::string::npos ? path : path.substr(cut + 1);
  const std::string parent = cut == std::string::npos ? "." : cut == 0 ? "/" : path.substr(0, cut);
  if (last == "." || last == "..") return notBrokered();
  UniqueFd dir(openat2Confined(start.get(), parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, walk));
  // The walk as the child asked it: its answer -- except where the child's
  // own magic links are on the way (the broker's walk of /proc/self finds no
  // process: ENOENT, or ELOOP where it refuses them): the kernel's (ELOOP
  // under RESOLVE_NO_MAGICLINKS), in the child's read-only view.
  if (!dir) return errno == ENOENT || errno == ELOOP ? notBrokered() : errorOf(errno);
  auto real = nameOf(dir.get());
  if (!real) return notBrokered();
  // The last component: a symlink there is refused with RESOLVE_NO_SYMLINKS
  // (O_NOFOLLOW's ELOOP); followed, confined to the dirfd, it is the kernel's.
  // A trailing slash follows it as well, as it does for every open but one
  // that creates (Name::entry: EISDIR, the symlink not followed).
  followFinal = (followFinal || (trailingSlash && !name.entry)) && !(resolveFlags & RESOLVE_NO_SYMLINKS);
  Resolution r = place(*real, last, trailingSlash, followFinal && !confined, 0);
  // Looked up with a trailing slash, it must be a directory (a symlink there
  // is followed below, or is O_NOFOLLOW's ELOOP under RESOLVE_NO_SYMLINKS).
  if (r.found == Found::kPlace && trailingSlash && !name.entry && r.place.exists() &&
      r.place.kind != ObjectKind::kDirectory && r.place.kind != ObjectKind::kSymlink)
    return errorOf(ENOTDIR);
  if (r.found == Found::kPlace && confined && followFinal && r.place.exists() && S_ISLNK(r.place.st.st_mode)) {
    // Followed confined, as the kernel would: its text walked again from the
    // same start with the same flags (absolute text from the dirfd under
    // RESOLVE_IN_ROOT, EXDEV under RESOLVE_BENEATH, as is a `..` out).
    if (depth >= kMaxSymlinks) return errorOf(ELOOP);
    char text[PATH_MAX];
    ssize_t n = ::readlinkat(r.place.parent.get(), r.place.name.c_str(), text, sizeof text);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof text) return notBrokered();
    Name next = name;
    next.path = text[0] == '/' ? std::string(text, static_cast<std::size_t>(n))
                               : parent + "/" + std::string(text, static_cast<std::size_t>(n));
    if (trailingSlash) *next.path += '/';
    return resolveRestricted(next, resolveFlags, followFinal, depth + 1);
  }
  return r;
}

WriteBroker::Answer BrokeredCallHandler::open(std::uint64_t flags, std::uint64_t mode, bool strict,
                                              std::uint64_t resolveFlags) {
  // O_PATH ignores every other flag: nothing is written.
  if (flags & O_PATH) return cont();
  if (strict && ((flags & ~kValidOpenFlags) || (mode & ~07777ULL) ||
                 (mode && !(flags & (O_CREAT | kTmpfileBit)))))
    return error(EINVAL);  // openat2 refuses what open() ignores
  const bool tmpfile = (flags & kTmpfileBit) != 0;
  const bool create = (flags & O_CREAT) && !tmpfile;
  const bool exclusive = create && (flags & O_EXCL);
  Answer answer;
  // O_TMPFILE names the directory; O_CREAT|O_EXCL never follows; O_NOFOLLOW refuses a symlink.
  auto name = pathArg(spec_.args.dirfd, spec_.args.path, tmpfile || (!exclusive && !(flags & O_NOFOLLOW)), answer,
                      false, tmpfile);
  if (!name) return answer;
  // O_CREAT with a trailing slash is EISDIR whatever is there, a symlink
  // to a directory included: the kernel does not follow it.
  name->entry = create;
  if (create && name->path && name->path->ends_with('/')) name->follow = false;
  bool follow = name->follow;
  Resolution r = resolveFlags ? resolveRestricted(*name, resolveFlags, follow) : resolve(*name);
  if (r.found != Found::kPlace) return notAPlace(r);
  Place& p = r.place;
  if (create && p.trailingSlash) return error(EISDIR);
  const bool writes = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) || tmpfile;
  std::vector<WriteEffect> effects;
  std::string operation;
  std::optional<std::uint32_t> setMode;
  if (tmpfile) {
    if (!p.exists()) return error(ENOENT);
    if (p.kind != ObjectKind::kDirectory) return error(ENOTDIR);
    effects.push_back({Effect::kModify, p.path, ObjectKind::kDirectory});
    operation = "create (O_TMPFILE)";
    setMode = static_cast<std::uint32_t>(mode);
  } else if (!p.exists()) {
    if (!create) return error(ENOENT);
    effects.push_back({Effect::kCreate, p.path, ObjectKind::kOther});
    operation = "create";
    setMode = static_cast<std::uint32_t>(mode);
  } else {
    if (exclusive) return error(EEXIST);
    if (!writes) {
      // O_RDONLY|O_CREAT of an existing file reads it: the child's own view can.
      return cont();
    }
    // The child's view of every tree is mounted nodev: a device node there
    // (one the host made: an extracted root filesystem's /dev) opens for no
    // one, as the kernel answers it. Opened on the broker's mount of the
    // tree, it would be the device itself -- a disk, /dev/kmsg, a tty.
    if (S_ISCHR(p.st.st_mode) || S_ISBLK(p.st.st_mode)) {
      WriteVerdict v;
      v.action = WriteVerdict::Action::kRefuse;
      v.error = EACCES;
      v.rule = "device node in a writable tree";
      v.reason = "the sandbox's view of a writable tree is mounted nodev";
      v.path = p.path;
      return verdictAnswer(v, "open for writing", name->path.value_or(""), "");
    }
    effects.push_back({Effect::kModify, p.path, p.kind});
    operation = (flags & O_TRUNC) ? "truncate" : "open for writing";
  }
  if (auto refused = unlessPerformed(effects, operation, name->path.value_or(""), "", setMode, {&p}))
    return std::move(*refused);

  // A FIFO must not block the supervisor: opened non-blocking,
  // then given back blocking as asked (the open file is the same).
  const bool special = p.exists() && !S_ISREG(p.st.st_mode) && !S_ISDIR(p.st.st_mode) && !S_ISLNK(p.st.st_mode);
  int ours = static_cast<int>((flags & ~static_cast<std::uint64_t>(O_CLOEXEC)) | O_CLOEXEC | O_NOFOLLOW);
  if (special) ours |= O_NONBLOCK;
  UniqueFd fd;
  {
    ActingAsChild as(create || tmpfile ? childUmask() : std::nullopt);
    if (tmpfile) {
      // The path names the directory the unnamed file goes in.
      fd.reset(p.isRoot() ? ::openat(p.treeFd, ".", ours & ~O_NOFOLLOW, static_cast<mode_t>(mode))
                          : ::openat(p.parent.get(), p.name.c_str(), ours & ~O_NOFOLLOW, static_cast<mode_t>(mode)));
    } else if (p.isRoot()) {
      // A tree that is a file: reopened through its descriptor.
      fd.reset(::open(selfFd(p.treeFd).c_str(), ours & ~(O_NOFOLLOW | O_CREAT | O_EXCL), 0));
    } else {
      fd.reset(::openat(p.parent.get(), p.name.c_str(), ours, static_cast<mode_t>(mode)));
    }
  }
  if (!fd) return error(errno);
  if (special && !(flags & O_NONBLOCK)) ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  Answer a{Answer::Kind::kFd};
  a.fd = std::move(fd);
  a.cloexec = (flags & O_CLOEXEC) != 0;
  return a;
}

WriteBroker::Answer BrokeredCallHandler::openHow() {
  std::uint64_t size = arg(spec_.args.extra[1]);
  if (size < sizeof(open_how) || size > 4096) return cont();  // EINVAL / E2BIG: the kernel's
  open_how how{};
  switch (readBytes(arg(spec_.args.extra[0]), &how, sizeof how)) {
    case Read::kOk: break;
    case Read::kGone: return goneAnswer();
    default: return cont();
  }
  // Read-only opens stay the kernel's, and so do resolve flags it may add
  // later (EINVAL today) or RESOLVE_CACHED's EAGAIN.
  const bool writes = (how.flags & (O_ACCMODE | O_CREAT | O_TRUNC | kTmpfileBit)) != 0;
  constexpr std::uint64_t kKnownResolve =
      RESOLVE_BENEATH | RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  if (!writes || (how.resolve & ~kKnownResolve) || size != sizeof how) return cont();
  return open(how.flags, how.mode, true, how.resolve);
}

WriteBroker::Answer BrokeredCallHandler::mknod(bool directory) {
  auto named = entryArg();
  if (auto* answer = std::get_if<Answer>(&named)) return std::move(*answer);
  auto& [name, r] = std::get<Named>(named);
  Place& p = r.place;
  if (p.exists() || p.isRoot()) return error(EEXIST);
  if (p.trailingSlash && !directory) return cont();  // the kernel's ENOENT
  const mode_t mode = static_cast<mode_t>(arg(spec_.args.mode));
  const ObjectKind kind = directory ? ObjectKind::kDirectory : kindOfMode(mode);
  if (kind != ObjectKind::kOther && kind != ObjectKind::kSpecial && !directory)
    return cont();  // mknod(S_IFDIR) or (S_IFLNK): the kernel's EPERM or EINVAL
  if (auto refused = unlessPerformed({{Effect::kCreate, p.path, kind}},
                                     directory ? "mkdir" : "mknod", *name.path, "",
                                     directory ? std::nullopt : std::optional<std::uint32_t>(mode), {&p}))
    return std::move(*refused);
  ActingAsChild as(childUmask());
  if (directory) return result(::mkdirat(p.parent.get(), p.name.c_str(), mode));
  return result(::mknodat(p.parent.get(), p.name.c_str(), mode, static_cast<dev_t>(arg(spec_.args.extra[0]))));
}

WriteBroker::Answer BrokeredCallHandler::symlink() {
  std::string target;
  switch (readString(arg(spec_.args.extra[0]), PATH_MAX, target)) {
    case Read::kOk: break;
    case Read::kGone: return goneAnswer();
    default: return cont();
  }
  auto named = entryArg();
  if (auto* answer = std::get_if<Answer>(&named)) return std::move(*answer);
  auto& [name, r] = std::get<Named>(named);
  Place& p = r.place;
  if (p.exists() || p.isRoot()) return error(EEXIST);
  if (target.empty()) return error(ENOENT);
  if (p.trailingSlash) return cont();  // the kernel's ENOENT
  if (auto refused =
          unlessPerformed({{Effect::kCreate, p.path, ObjectKind::kSymlink}}, "symlink", *name.path, target, {}, {&p}))
    return std::move(*refused);
  ActingAsChild as(std::nullopt);
  return result(::symlinkat(target.c_str(), p.parent.get(), p.name.c_str()));
}

WriteBroker::Answer BrokeredCallHandler::link() {
  const int flags = spec_.args.flags >= 0 ? intArg(spec_.args.flags) : 0;
  if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) return error(EINVAL);
  Answer answer;
  // A source named "." or ".." is a directory (EPERM), as any other is.
  auto from = pathArg(spec_.args.dirfd, spec_.args.path, (flags & AT_SYMLINK_FOLLOW) != 0, answer,
                      (flags & AT_EMPTY_PATH) != 0, true);
  if (!from) return answer;
  auto to = pathArg(spec_.args.dirfd2, spec_.args.path2, false, answer);
  if (!to) return answer;
  to->entry = true;
  if (from->path && (flags & AT_SYMLINK_FOLLOW) && from->path->front() == '/') {
    // linkat("/proc/self/fd/N", AT_SYMLINK_FOLLOW): the descriptor's object,
    // as with AT_EMPTY_PATH (how an O_TMPFILE file gets its name).
    auto own = ownLink(*from->path, [this] { return callerIds(); });
    if (own && own->fd >= 0 && own->rest.empty()) {
      from->path.reset();
      from->dirfd = own->fd;
    }
  }
  Resolution target = resolve(*to);
  if (target.found != Found::kPlace) return notAPlace(target);
  Place& dst = target.place;
  // The source: a name, or (AT_EMPTY_PATH) the descriptor's object -- an
  // O_TMPFILE file getting its first name has no name to decide on.
  UniqueFd object;
  std::vector<WriteEffect> effects;
  std::string sourcePath;
  if (!from->path) {
    std::string held = "/proc/" + std::to_string(tid_) + "/fd/" + std::to_string(from->dirfd);
    object.reset(::open(held.c_str(), O_PATH | O_CLOEXEC));
    if (!valid()) return goneAnswer();
    if (!object) return cont();  // EBADF: the kernel's
    struct stat st {};
    if (::fstat(object.get(), &st) != 0) return error(errno);
    if (S_ISDIR(st.st_mode)) return error(EPERM);
    auto name = nameOf(object.get());
    if (st.st_nlink > 0 && name) {
      sourcePath = b_.workspace_.hostPath(*name);
      effects.push_back({Effect::kLinkSource, sourcePath, kindOf(st)});
    }
    // A link to a symlink (an O_PATH|O_NOFOLLOW descriptor's) is one too.
    effects.push_back({Effect::kCreate, dst.path, kindOf(st)});
  } else {
    Resolution source = resolve(*from);
    if (source.found != Found::kPlace) {
      // A source outside every tree: another mount in the sandbox.
      return source.found == Found::kNotBrokered ? error(EXDEV) : notAPlace(source);
    }
    if (!source.place.exists()) return error(ENOENT);
    if (source.place.kind == ObjectKind::kDirectory) return error(EPERM);
    object = source.place.object();
    if (!object) return error(errno);
    sourcePath = source.place.path;
    effects.push_back({Effect::kLinkSource, sourcePath, source.place.kind});
    effects.push_back({Effect::kCreate, dst.path, source.place.kind});
  }
  if (dst.exists() || dst.isRoot()) return error(EEXIST);
  if (dst.trailingSlash) return cont();  // the kernel's ENOENT
  if (auto refused = unlessPerformed(effects, "link", from->path.value_or(sourcePath), *to->path, {}, {&dst}))
    return std::move(*refused);
  ActingAsChild as(std::nullopt);
  return result(::linkat(AT_FDCWD, selfFd(object.get()).c_str(), dst.parent.get(), dst.name.c_str(), AT_SYMLINK_FOLLOW));
}

WriteBroker::Answer BrokeredCallHandler::rename() {
  const unsigned flags = spec_.args.flags >= 0 ? static_cast<unsigned>(arg(spec_.args.flags)) : 0;
  Answer answer;
  auto from = pathArg(spec_.args.dirfd, spec_.args.path, false, answer);
  if (!from) return answer;
  auto to = pathArg(spec_.args.dirfd2, spec_.args.path2, false, answer);
  if (!to) return answer;
  from->entry = to->entry = true;
  // "." or ".." as either last component: the kernel's EBUSY, before it
  // looks at mounts (placed beside the other name, it would be EXDEV).
  for (const Name* n : {&*from, &*to}) {
    std::string_view path = *n->path;
    path = path.substr(0, path.find_last_not_of('/') + 1);
    std::string_view last = path.substr(path.rfind('/') + 1);
    if (last == "." || last == "..") return cont();
  }
  Resolution a = resolve(*from);
  Resolution bRes = resolve(*to);
  if (a.found == Found::kGone || bRes.found == Found::kGone) return goneAnswer();
  if (a.found == Found::kError) return error(a.error);
  if (bRes.found == Found::kError) return error(bRes.error);
  if (a.found != Found::kPlace && bRes.found != Found::kPlace) return cont();
  if (a.found != Found::kPlace || bRes.found != Found::kPlace) return error(EXDEV);  // one is on another mount
  Place& src = a.place;
  Place& dst = bRes.place;
  if (!src.exists()) return error(ENOENT);
  std::vector<WriteEffect> effects = {{Effect::kMoveOut, src.path, src.kind}, {Effect::kMoveIn, dst.path, src.kind}};
  // A name spelt with a trailing slash must be a directory itself (the
  // kernel follows no symlink at either name): rename's source, its
  // destination unless exchanged, and an exchanged destination that exists.
  const bool srcDir = src.kind == ObjectKind::kDirectory;
  if (!srcDir && (src.trailingSlash || (dst.trailingSlash && !(flags & RENAME_EXCHANGE)))) return error(ENOTDIR);
  if (flags & RENAME_EXCHANGE) {
    if (!dst.exists()) return error(ENOENT);
    if (dst.trailingSlash && dst.kind != ObjectKind::kDirectory) return error(ENOTDIR);
    effects.push_back({Effect::kMoveOut, dst.path, dst.kind});
    effects.push_back({Effect::kMoveIn, src.path, dst.kind});
  } else if (dst.exists()) {
    effects.push_back({Effect::kRemove, dst.path, dst.kind});
  }
  if (auto refused =
          unlessPerformed(effects, (flags & RENAME_EXCHANGE) ? "rename (exchange)" : "rename", *from->path, *to->path,
                          {}, {&src, &dst}))
    return std::move(*refused);
  if (src.isRoot() || dst.isRoot()) return error(EBUSY);
  ActingAsChild as(std::nullopt);
  return result(::syscall(SYS_renameat2, src.parent.get(), src.name.c_str(), dst.parent.get(), dst.name.c_str(), flags));
}

WriteBroker::Answer BrokeredCallHandler::unlink(bool directory) {
  const int flags = spec_.args.flags >= 0 ? intArg(spec_.args.flags) : 0;
  if (flags & ~AT_REMOVEDIR) return error(EINVAL);
  auto named = entryArg();
  if (auto* answer = std::get_if<Answer>(&named)) return std::move(*answer);
  auto& [name, r] = std::get<Named>(named);
  Place& p = r.place;
  if (!p.exists()) return error(ENOENT);
  // "name/" must be a directory itself: a symlink to one is not followed.
  if (p.trailingSlash && p.kind != ObjectKind::kDirectory) return error(ENOTDIR);
  if (auto refused =
          unlessPerformed({{Effect::kRemove, p.path, p.kind}}, directory ? "rmdir" : "unlink", *name.path, "", {}, {&p}))
    return std::move(*refused);
  if (p.isRoot()) return error(EBUSY);
  ActingAsChild as(std::nullopt);
  return result(::unlinkat(p.parent.get(), p.name.c_str(), directory ? AT_REMOVEDIR : 0));
}

WriteBroker::Answer BrokeredCallHandler::truncate() {
  auto named = placeArg(true, false, true);
  if (auto* answer = std::get_if<Answer>(&named)) return std::move(*answer);
  auto& [name, r] = std::get<Named>(named);
  const auto length = static_cast<std::int64_t>(arg(spec_.args.extra[0]));
  Place& p = r.place;
  if (!p.exists()) return error(ENOENT);
  if (p.kind == ObjectKind::kDirectory) return error(EISDIR);
  if (!S_ISREG(p.st.st_mode)) return error(EINVAL);
  if (length < 0) return error(EINVAL);
  if (auto refused = unlessPerformed({{Effect::kModify, p.path, p.kind}}, "truncate", *name.path, "", {}, {&p}))
    return std::move(*refused);
  // The program's RLIMIT_FSIZE, which the broker does not run under.
  if (b_.fileSizeLimit() && static_cast<std::uint64_t>(length) > b_.fileSizeLimit()) return error(EFBIG);
  ActingAsChild as(std::nullopt);
  UniqueFd object = p.object();
  UniqueFd fd(object ? ::open(selfFd(object.get()).c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC) : -1);
  if (!fd) return error(errno);
  return result(::ftruncate(fd.get(), length));
}

WriteBroker::Answer BrokeredCallHandler::metadata() {
  const BrokeredKind kind = spec_.kind;
  int atFlags = spec_.args.flags >= 0 ? intArg(spec_.args.flags) : 0;
  atFlags |= static_cast<int>(spec_.impliedFlags);
  const bool emptyIsObject = (atFlags & AT_EMPTY_PATH) != 0;
  Answer answer;
  auto name = pathArg(spec_.args.dirfd, spec_.args.path, !(atFlags & AT_SYMLINK_NOFOLLOW), answer, emptyIsObject, true);
  if (!name) return answer;

  // What the call sets, read before anything is decided.
  std::string xattrName;
  std::vector<unsigned char> xattrValue;
  int xattrFlags = 0;
  timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  if (kind == BrokeredKind::kSetXattr || kind == BrokeredKind::kSetXattrArgs || kind == BrokeredKind::kRemoveXattr) {
    switch (readString(arg(spec_.args.extra[0]), XATTR_NAME_MAX + 1, xattrName)) {
      case Read::kOk: break;
      case Read::kGone: return goneAnswer();
      default: return cont();  // EFAULT, ERANGE: the kernel's
    }
    std::uint64_t valueAt = 0, size = 0;
    if (kind == BrokeredKind::kSetXattr) {
      valueAt = arg(spec_.args.extra[1]);
      size = arg(spec_.args.extra[2]);
      xattrFlags = intArg(spec_.args.extra[3]);
    } else if (kind == BrokeredKind::kSetXattrArgs) {
      if (arg(spec_.args.extra[2]) != sizeof(abi::XattrArgs)) return cont();
      abi::XattrArgs args{};
      switch (readBytes(arg(spec_.args.extra[1]), &args, sizeof args)) {
        case Read::kOk: break;
        case Read::kGone: return goneAnswer();
        default: return cont();
      }
      valueAt = args.value;
      size = args.size;
      xattrFlags = static_cast<int>(args.flags);
    }
    if (size > XATTR_SIZE_MAX) return error(E2BIG);
    xattrValue.resize(size);
    if (size) {
      switch (readBytes(valueAt, xattrValue.data(), size)) {
        case Read::kOk: break;
        case Read::kGone: return goneAnswer();
        default: return cont();
      }
    }
  } else if (kind == BrokeredKind::kUtime || kind == BrokeredKind::kUtimes || kind == BrokeredKind::kUtimens) {
    std::uint64_t at = arg(spec_.args.extra[0]);
    if (at != 0) {
      Read read = Read::kOk;
      if (kind == BrokeredKind::kUtime) {
        utimbuf u{};
        read = readBytes(at, &u, sizeof u);
        times[0] = {u.actime, 0};
        times[1] = {u.modtime, 0};
      } else if (kind == BrokeredKind::kUtimes) {
        timeval tv[2]{};
        read = readBytes(at, tv, sizeof tv);
        for (int i = 0; i < 2; ++i) {
          if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000) return error(EINVAL);
          times[i] = {tv[i].tv_sec, tv[i].tv_usec * 1000};
        }
      } else {
        read = readBytes(at, times, sizeof times);
      }
      if (read == Read::kGone) return goneAnswer();
      if (read != Read::kOk) return cont();
    }
  }

  std::optional<std::uint32_t> mode;
  if (kind == BrokeredKind::kChmod) mode = static_cast<std::uint32_t>(arg(spec_.args.mode));
  if (!name->path && name->dirfd != AT_FDCWD) {
    // A descriptor the broker opened (tar's and cp's fchmod, fchown,
    // futimens): decided by its name, done by the kernel on the file the
    // child holds -- swapping the descriptor meanwhile reaches only a file
    // the child's own view keeps read-only, or another one the broker opened.
    // Such a file was not protected when the broker opened it, and no
    // brokered call can make it so (a rename or link to a protected name,
    // or a git directory made around it, is refused).
    if (issuedByBroker(name->dirfd)) return cont();
  }
  Resolution r = resolve(*name);
  if (r.found != Found::kPlace) return notAPlace(r);
  Place& p = r.place;
  if (!p.exists()) return error(ENOENT);
  if (auto refused = unlessPerformed({{Effect::kModify, p.path, p.kind}}, brokeredKindName(kind),
                                     name->path.value_or(""), "", mode, {&p}))
    return std::move(*refused);

  ActingAsChild as(std::nullopt);
  UniqueFd object = p.object();
  if (!object) return error(errno);
  const bool symlink = S_ISLNK(p.st.st_mode);
  switch (kind) {
    case BrokeredKind::kChmod:
      if (symlink) return error(EOPNOTSUPP);
      return result(::chmod(selfFd(object.get()).c_str(), static_cast<mode_t>(*mode & 07777)));
    case BrokeredKind::kChown:
      return result(::fchownat(object.get(), "", static_cast<uid_t>(arg(spec_.args.extra[0])),
                               static_cast<gid_t>(arg(spec_.args.extra[1])), AT_EMPTY_PATH));
    case BrokeredKind::kUtime:
    case BrokeredKind::kUtimes:
    case BrokeredKind::kUtimens:
      return result(::utimensat(object.get(), "", times, AT_EMPTY_PATH));
    case BrokeredKind::kSetXattr:
    case BrokeredKind::kSetXattrArgs:
      if (symlink) return error(EPERM);
      return result(::setxattr(selfFd(object.get()).c_str(), xattrName.c_str(), xattrValue.data(), xattrValue.size(),
                               xattrFlags));
    case BrokeredKind::kRemoveXattr:
      if (symlink) return error(EPERM);
      return result(::removexattr(selfFd(object.get()).c_str(), xattrName.c_str()));
    default: return error(EPERM);
  }
}

WriteBroker::Answer BrokeredCallHandler::access() {
  const int flags = spec_.args.flags >= 0 ? intArg(spec_.args.flags) : 0;
  const int mode = intArg(spec_.args.mode);
  auto named = placeArg(!(flags & AT_SYMLINK_NOFOLLOW), (flags & AT_EMPTY_PATH) != 0, true);
  if (auto* answer = std::get_if<Answer>(&named)) return std::move(*answer);
  Place& p = std::get<Named>(named).resolution.place;
  if (!p.exists()) return error(ENOENT);
  WriteVerdict v = decide({{Effect::kModify, p.path, p.kind}}, std::nullopt, {&p});
  if (v.action == WriteVerdict::Action::kNotBrokered) return cont();
  // A question, not a write: answered as the write would be, not audited.
  if (v.action != WriteVerdict::Action::kPerform) return error(v.action == WriteVerdict::Action::kRefuse ? v.error : EACCES);
  ActingAsChild as(std::nullopt);
  UniqueFd object = p.object();
  if (!object) return error(errno);
  return result(::syscall(SYS_faccessat2, object.get(), "", mode, AT_EMPTY_PATH | (flags & AT_EACCESS)));
}

// --- the broker ---------------------------------------------------------------

template <bool kAllowUnixSockets, bool kLimitFileSize>
const WriteBroker::RowTable& WriteBroker::rowTable() {
  static const RowTable rows = [] {
    RowTable out;
    for (const auto& rule : seccompRules({.allowUnixSockets = kAllowUnixSockets, .limitFileSize = kLimitFileSize})) {
      int nr = seccompSyscallNumber(rule.syscall);
      if (nr < 0) continue;
      if (!rule.brokered && rule.viaSupervisor) out[nr].denials.push_back(rule);
    }
    for (const auto& call : brokeredCalls()) {
      int nr = seccompSyscallNumber(call.syscall);
      if (nr >= 0) out[nr].brokered = &call;
    }
    return out;
  }();
  return rows;
}

const WriteBroker::RowTable& WriteBroker::rowsFor(const SeccompOptions& options) {
  static_assert(sizeof(SeccompOptions) == 2, "rowsFor() has a table for each combination of the two options");
  if (options.allowUnixSockets) return options.limitFileSize ? rowTable<true, true>() : rowTable<true, false>();
  return options.limitFileSize ? rowTable<false, true>() : rowTable<false, false>();
}

WriteBroker::WriteBroker(const DerivedRules& rules, policy::WriteRules writeRules, const SeccompOptions& options)
    : rules_(std::move(writeRules)), fileSizeLimit_(rules.limits().fileSizeBytes), options_(options) {}

std::variant<std::shared_ptr<WriteBroker>, std::string> WriteBroker::open(const DerivedRules& rules,
                                                                           policy::WriteRules writeRules,
                                                                           const SeccompOptions& options,
                                                                           WorkspaceMount workspace) {
  std::shared_ptr<WriteBroker> broker(new WriteBroker(rules, std::move(writeRules), options));
  broker->workspace_ = std::move(workspace);
  for (const auto& tree : broker->trees()) {
    UniqueFd fd(abi::openat2(AT_FDCWD, tree.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC,
                             RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (!fd && errno != ENOENT)
      return "openat2(\"" + tree + "\", O_PATH|O_NOFOLLOW, RESOLVE_NO_SYMLINKS) failed: " + strerrorname_np(errno);
    struct statx sx {};
    if (fd && ::statx(fd.get(), "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID))
      broker->hostMounts_.push_back(sx.stx_mnt_id);
    broker->treeFds_.push_back(std::move(fd));
  }
  return broker;
}

std::vector<int> WriteBroker::treeFds() const {
  std::vector<int> out;
  for (const auto& fd : treeFds_) out.push_back(fd.get());
  return out;
}

void WriteBroker::dedicateThisThread() noexcept {
  tDedicated = true;
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0 || (data[0].effective | data[1].effective) == 0) return;
  data[0].effective = data[1].effective = 0;
  (void)::syscall(SYS_capset, &header, data);  // failed: each call drops them for itself, as on any thread
}

WriteBroker::Answer WriteBroker::answer(int listener, const seccomp_notif& n) const {
  const auto* args = reinterpret_cast<const std::uint64_t*>(n.data.args);
  Answer deny{Answer::Kind::kError, 0, EPERM};
  SeccompDenial d;
  d.pid = static_cast<pid_t>(n.pid);
  const char* name = seccompSyscallName(n.data.nr);
  d.syscall = name ? name : "syscall " + std::to_string(n.data.nr);
  std::copy(args, args + 6, d.args.begin());
  const pid_t tid = static_cast<pid_t>(n.pid);
  auto pending = [&] { return stillWaiting(listener, n.id); };
  // Netlink sockets are counted and their buffers capped (socket_limits.h).
  if (n.data.nr == SYS_socket && countedSocket(args)) {
    const auto verdict = netlink_.admit(tid, pending);
    if (verdict.kind == NetlinkSocketGate::Verdict::Kind::kGone) return Answer{};
    if (verdict.kind == NetlinkSocketGate::Verdict::Kind::kContinue) return Answer{Answer::Kind::kContinue};
    d.operation = "create a netlink socket";
    d.rule = "netlink sockets per sandbox (" + std::to_string(kNetlinkSocketsPerSandbox) + ")";
    d.reason = verdict.sockets < 0 ? "the sandbox's netlink sockets could not be counted"
                                   : "netlink's buffers are kernel memory no memory cgroup charges";
    deny.error = ENOBUFS;
    deny.denial = std::move(d);
    return deny;
  }
  netlink_.seen(tid);
  if (n.data.nr == SYS_setsockopt) {
    const auto done = performSocketBufferOption(tid, args, pending);
    if (done.kind == SocketBufferAnswer::Kind::kGone) return Answer{};
    if (done.kind == SocketBufferAnswer::Kind::kContinue) return Answer{Answer::Kind::kContinue};
    if (done.error == 0) return Answer{Answer::Kind::kValue};
    return Answer{Answer::Kind::kError, 0, done.error};
  }
  // fallocate() is decided from its registers: the filter hands it over only
  // under limits.fileSizeBytes (a 0 limit here, which cannot happen, refuses it).
  if (n.data.nr == SYS_fallocate) {
    const auto verdict = fileSizeLimit_ == 0 ? AllocationVerdict{false, EPERM}
                                             : decideFallocate(args[1], args[2], args[3], fileSizeLimit_);
    if (verdict.allowed) return Answer{Answer::Kind::kContinue};
    deny.error = verdict.error;
    deny.denial = std::move(d);
    return deny;
  }
  const RowTable& table = rowsFor(options_);
  auto rows = table.find(n.data.nr);
  // The table's EPERM rows come first, whatever else the call would be.
  if (rows != table.end())
    for (const auto& rule : rows->second.denials)
      if (seccompMatches(rule, args)) {
        deny.denial = std::move(d);
        return deny;
      }
  if (rows == table.end() || !rows->second.brokered) {
    deny.denial = std::move(d);  // trapped, yet in no row: fail closed
    return deny;
  }
  return BrokeredCallHandler(*this, listener, n, *rows->second.brokered).run();
}

}  // namespace stockade::platform
