// ASYNC-SIGNAL-SAFE: joinCgroups() only (it runs between clone and exec).
// Everything else runs in the parent.
#include "platform/linux/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "platform/linux/mountinfo.h"
#include "platform/linux/raw_syscall.h"

namespace stockade::platform {
namespace {

// The kernel's PID_MAX_LIMIT on 64-bit (include/linux/threads.h): pids.max
// accepts 0..PID_MAX_LIMIT or "max".
constexpr std::uint64_t kPidMaxLimit = 4 * 1024 * 1024;

constexpr CgroupController kControllers[] = {CgroupController::kPids, CgroupController::kMemory,
                                             CgroupController::kCpu};

unsigned bit(CgroupController c) { return 1u << static_cast<unsigned>(c); }

// The controller's name in a v1 mount's options and /proc/self/cgroup.
const char* v1Name(CgroupController c) {
  switch (c) {
    case CgroupController::kPids: return "pids";
    case CgroupController::kMemory: return "memory";
    case CgroupController::kCpu: return "cpuacct";  // time accounting; "cpu" is the scheduler's weights
  }
  return "?";
}

std::string errnoText(int err) {
  const char* name = strerrorname_np(err);
  return std::string(name ? name : std::to_string(err).c_str()) + " (" + std::strerror(err) + ")";
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    auto at = text.find(sep);
    out.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + 1);
  }
}

bool hasToken(std::string_view list, std::string_view token, char sep) {
  for (auto t : split(list, sep))
    if (t == token) return true;
  return false;
}

using CgroupMount = MountEntry;

std::vector<CgroupMount> cgroupMounts(std::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (auto& m : parseMountInfo(mountinfo))
    if (m.fsType == "cgroup2" || m.fsType == "cgroup") out.push_back(std::move(m));
  return out;
}

// The directory under `mount` for our cgroup `path`, when the mount shows it.
std::optional<std::string> dirInMount(const CgroupMount& mount, const std::string& path) {
  std::string relative;
  if (mount.root == "/") {
    relative = path == "/" ? "" : path;
  } else if (path == mount.root) {
    relative = "";
  } else if (path.starts_with(mount.root + "/")) {
    relative = path.substr(mount.root.size());
  } else {
    return std::nullopt;
  }
  return (mount.mountPoint == "/" && !relative.empty() ? "" : mount.mountPoint) + relative;
}

std::optional<std::string> readSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// Whether the host has swap in use: then a memory limit that does not cover
// swap can be dodged by swapping out.
bool hostHasSwap() {
  auto swaps = readSmallFile("/proc/swaps");  // a header line, then one line per device
  return swaps && swaps->find('\n') != std::string::npos && swaps->find('\n') + 1 < swaps->size();
}

// May we create a child cgroup in `dir` (and, for cgroup2, move tasks through
// it)? nullopt: yes; else why not.
std::optional<std::string> creatable(const CgroupHierarchy& h) {
  if (::faccessat(AT_FDCWD, h.ownCgroupDir.c_str(), W_OK | X_OK, AT_EACCESS) != 0)
    return "cannot create a cgroup there: access(W_OK) failed: " + errnoText(errno);
  // Moving a task in cgroup2 needs write access to the common ancestor's
  // cgroup.procs: ours.
  if (h.mechanism == LimitMechanism::kCgroup2 &&
      ::faccessat(AT_FDCWD, (h.ownCgroupDir + "/cgroup.procs").c_str(), W_OK, AT_EACCESS) != 0)
    return "cannot move tasks there: access(\"cgroup.procs\", W_OK) failed: " + errnoText(errno);
  return std::nullopt;
}

std::optional<std::string> unusableReason(const CgroupHierarchy& h, CgroupController c, bool swap) {
  const std::string name = cgroupControllerName(c);
  // cpu.stat (usage_usec) is in every cgroup2 cgroup, controller or not.
  if (h.mechanism == LimitMechanism::kCgroup2 && c != CgroupController::kCpu) {
    auto controllers = readSmallFile(h.ownCgroupDir + "/cgroup.controllers");
    if (!controllers) return "cannot read cgroup.controllers";
    if (!hasToken(trimmed(*controllers), name, ' '))
      return "the " + name + " controller is not available (cgroup.controllers: \"" + trimmed(*controllers) + "\")";
    auto subtree = readSmallFile(h.ownCgroupDir + "/cgroup.subtree_control");
    if (!subtree) return "cannot read cgroup.subtree_control";
    if (!hasToken(trimmed(*subtree), name, ' '))
      return name + " is not enabled for child cgroups (cgroup.subtree_control: \"" + trimmed(*subtree) +
             "\"; a delegating manager writes \"+" + name + "\" there)";
  }
  // Swap must be inside the limit. A cgroup2 root has no memory.swap.max of
  // its own; create() checks the new cgroup then.
  if (c == CgroupController::kMemory && swap) {
    const char* file = h.mechanism == LimitMechanism::kCgroup2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes";
    if (!exists(h.ownCgroupDir + "/" + file) &&
        (h.mechanism == LimitMechanism::kCgroupV1 || exists(h.ownCgroupDir + "/memory.max")))
      return std::string("the host has swap and the memory controller does not account it (no ") + file +
             "; swapaccount=0?): pages swapped out would be outside the limit";
  }
  return creatable(h);
}

std::atomic<unsigned> gNextCgroup{0};

// Removes the empty sandbox cgroups that supervisors which died without
// cleaning up (SIGKILL) left beside ours: `stockade-<pid>-<n>` whose pid is
// no longer alive. Once per directory per process. A cgroup that still has
// tasks cannot be removed (EBUSY) and stays; a pid reused by another process
// keeps its directories until that process is gone too.
void sweepAbandoned(const std::string& dir) {
  static std::mutex mu;
  static std::set<std::string> swept;
  std::lock_guard lock(mu);
  if (!swept.insert(dir).second) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with("stockade-")) continue;
    std::size_t dash = name.find('-', 9);
    if (dash == std::string::npos) continue;
    long pid = std::strtol(name.c_str() + 9, nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ::rmdir(entry.path().c_str());
  }
}

// Writes `value` to the cgroup file `name`: 0, or the errno of the failed
// open() or write(), with `error` naming the call.
int writeFile(int dir, const std::string& dirPath, const char* name, const std::string& value, std::string& error) {
  UniqueFd file(::openat(dir, name, O_WRONLY | O_CLOEXEC));
  if (!file) {
    const int err = errno;
    error = "open(\"" + dirPath + "/" + name + "\", O_WRONLY) failed: " + errnoText(err);
    return err;
  }
  if (::write(file.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
    const int err = errno;
    error = "write(\"" + dirPath + "/" + name + "\", \"" + value + "\") failed: " + errnoText(err);
    return err;
  }
  return 0;
}

// The text of a small counter file (kernfs regenerates it on every open), or
// the failed call.
std::variant<std::string, int> readCounter(int dir, const char* name) {
  UniqueFd file(::openat(dir, name, O_RDONLY | O_CLOEXEC));
  char buf[2048];
  ssize_t n = file ? ::read(file.get(), buf, sizeof buf) : -1;
  if (n < 0) return errno;
  return std::string(buf, static_cast<std::size_t>(n));
}

// The number after `key` at the start of a line of `text` ("usage_usec 123").
std::optional<std::uint64_t> keyedValue(std::string_view text, std::string_view key) {
  for (auto line : split(text, '\n')) {
    if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ' ') continue;
    std::string_view number = line.substr(key.size() + 1);
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec == std::errc()) return value;
  }
  return std::nullopt;
}

}  // namespace

const char* cgroupControllerName(CgroupController controller) noexcept {
  switch (controller) {
    case CgroupController::kPids: return "pids";
    case CgroupController::kMemory: return "memory";
    case CgroupController::kCpu: return "cpu";
  }
  return "unknown";
}

const char* limitMechanismName(LimitMechanism mechanism) noexcept {
  switch (mechanism) {
    case LimitMechanism::kNone: return "none";
    case LimitMechanism::kCgroup2: return "cgroup2";
    case LimitMechanism::kCgroupV1: return "cgroup-v1";
    case LimitMechanism::kRlimit: return "rlimit";
  }
  return "unknown";
}

std::vector<CgroupHierarchy> cgroupHierarchies(std::string_view mountinfo, std::string_view procCgroup) {
  std::optional<std::string> unifiedPath;
  std::vector<std::pair<std::string, std::string>> v1Paths;  // controller list, path
  for (auto line : split(procCgroup, '\n')) {
    // hierarchy-id:controllers:path (the path may itself contain ':')
    auto first = line.find(':');
    if (first == std::string_view::npos) continue;
    auto second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view id = line.substr(0, first);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (!path.starts_with("/")) continue;
    if (id == "0" && controllers.empty()) unifiedPath = path;
    else v1Paths.emplace_back(controllers, std::move(path));
  }
  std::vector<CgroupHierarchy> cgroup2, v1;
  auto add = [](std::vector<CgroupHierarchy>& to, LimitMechanism m, std::string dir, unsigned controllers) {
    for (const auto& h : to)
      if (h.ownCgroupDir == dir) return;
    to.push_back({m, std::move(dir), controllers, {}});
  };
  // The controllers of ours a v1 mount carries; a controller is in one v1
  // hierarchy only, so two mounts sharing one show the same hierarchy.
  auto v1Controllers = [](const CgroupMount& mount) {
    unsigned controllers = 0;
    for (auto c : kControllers)
      if (hasToken(mount.superOptions, v1Name(c), ',')) controllers |= bit(c);
    return controllers;
  };
  const auto mounts = cgroupMounts(mountinfo);
  for (const auto& mount : mounts) {
    if (mount.fsType == "cgroup2") {
      if (!unifiedPath) continue;
      if (auto dir = dirInMount(mount, *unifiedPath))
        add(cgroup2, LimitMechanism::kCgroup2, *dir, bit(CgroupController::kPids) | bit(CgroupController::kMemory) |
                                                         bit(CgroupController::kCpu));
      continue;
    }
    const unsigned controllers = v1Controllers(mount);
    if (controllers == 0) continue;
    // Our path in this hierarchy: the /proc/self/cgroup line naming one of its controllers.
    for (const auto& [names, path] : v1Paths) {
      bool same = false;
      for (auto c : kControllers)
        if ((controllers & bit(c)) && hasToken(names, v1Name(c), ',')) same = true;
      if (!same) continue;
      if (auto dir = dirInMount(mount, path)) add(v1, LimitMechanism::kCgroupV1, *dir, controllers);
      break;
    }
  }
  cgroup2.insert(cgroup2.end(), v1.begin(), v1.end());
  for (auto& h : cgroup2)
    for (const auto& mount : mounts) {
      const bool same = h.mechanism == LimitMechanism::kCgroup2 ? mount.fsType == "cgroup2"
                                                                : (v1Controllers(mount) & h.controllers) != 0;
      if (same && !mount.readOnly) h.writableMounts.push_back(mount.mountPoint);
    }
  return cgroup2;
}

std::optional<std::string> v1CgroupDir(std::string_view controller, std::string_view mountinfo,
                                       std::string_view procCgroup) {
  for (const auto& mount : cgroupMounts(mountinfo)) {
    if (mount.fsType != "cgroup" || !hasToken(mount.superOptions, controller, ',')) continue;
    for (auto line : split(procCgroup, '\n')) {
      auto first = line.find(':');
      auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
      if (second == std::string_view::npos) continue;
      if (!hasToken(line.substr(first + 1, second - first - 1), controller, ',')) continue;
      std::string path(line.substr(second + 1));
      if (path.starts_with("/")) return dirInMount(mount, path);
    }
  }
  return std::nullopt;
}

const std::variant<CgroupHierarchy, std::string>& CgroupControllers::of(CgroupController c) const noexcept {
  switch (c) {
    case CgroupController::kPids: return pids;
    case CgroupController::kMemory: return memory;
    case CgroupController::kCpu: return cpu;
  }
  return pids;
}

CgroupControllers findCgroupControllers() {
  CgroupControllers found;
  auto mountinfo = readSmallFile("/proc/self/mountinfo");
  auto procCgroup = readSmallFile("/proc/self/cgroup");
  if (!mountinfo || !procCgroup) {
    found.pids = found.memory = found.cpu = std::string("cannot read /proc/self/mountinfo and /proc/self/cgroup");
    return found;
  }
  const auto candidates = cgroupHierarchies(*mountinfo, *procCgroup);
  const bool swap = hostHasSwap();
  for (auto c : kControllers) {
    auto& slot = c == CgroupController::kPids ? found.pids : c == CgroupController::kMemory ? found.memory : found.cpu;
    const std::string name = cgroupControllerName(c);
    std::string reasons;
    bool any = false, chosen = false;
    for (const auto& h : candidates) {
      if (!h.has(c)) continue;
      any = true;
      auto why = unusableReason(h, c, swap);
      if (!why) {
        slot = h;
        chosen = true;
        break;
      }
      if (!reasons.empty()) reasons += "; ";
      reasons += std::string(limitMechanismName(h.mechanism)) + " " + h.ownCgroupDir + ": " + *why;
    }
    if (chosen) continue;
    if (!any) slot = "no cgroup hierarchy with the " + name + " controller is mounted";
    else
      slot = "no usable " + name + " cgroup (" + reasons + "); run as root, or in a cgroup delegated to this user" +
             (c == CgroupController::kCpu ? "" : " with " + name + " enabled");
  }
  return found;
}

std::variant<CgroupHierarchy, std::string> findCgroupController(CgroupController controller) {
  return findCgroupControllers().of(controller);
}

const char* limitToKillFor(const CgroupUsage& usage, const CgroupLimits& limits) noexcept {
  if (limits.memoryBytes != 0 && usage.oomKills > 0) return "limits.memoryBytes";
  // Whole seconds compared, so no multiplication can overflow.
  if (limits.cpuSeconds != 0 && usage.cpuNanoseconds && *usage.cpuNanoseconds / 1'000'000'000 >= limits.cpuSeconds)
    return "limits.cpuSeconds";
  return nullptr;
}

const char* limitReached(const CgroupUsage& usage, const CgroupLimits& limits) noexcept {
  if (const char* kill = limitToKillFor(usage, limits)) return kill;
  if (limits.pids != 0 && usage.forksRefused > 0) return "limits.pids";
  return nullptr;
}

SandboxCgroup& SandboxCgroup::operator=(SandboxCgroup&& other) noexcept {
  if (this != &other) {
    (void)remove();
    dirs_ = std::move(other.dirs_);
    other.dirs_.clear();
    limits_ = other.limits_;
  }
  return *this;
}

SandboxCgroup::~SandboxCgroup() { (void)remove(); }

const SandboxCgroup::Dir* SandboxCgroup::dirOf(CgroupController c) const noexcept {
  for (const auto& d : dirs_)
    if (d.controllers & bit(c)) return &d;
  return nullptr;
}

LimitMechanism SandboxCgroup::mechanismOf(CgroupController c) const noexcept {
  const Dir* d = dirOf(c);
  return d ? d->mechanism : LimitMechanism::kNone;
}

const std::string& SandboxCgroup::pathOf(CgroupController c) const noexcept {
  static const std::string kNone;
  const Dir* d = dirOf(c);
  return d ? d->path : kNone;
}

int SandboxCgroup::cgroup2DirFd() const noexcept {
  for (const auto& d : dirs_)
    if (d.mechanism == LimitMechanism::kCgroup2) return d.fd.get();
  return -1;
}

std::variant<SandboxCgroup, std::string> SandboxCgroup::create(const CgroupControllers& where,
                                                               const CgroupLimits& limits) {
  SandboxCgroup cgroup;  // from the first directory on, its destructor removes what was made
  cgroup.limits_ = limits;
  const std::uint64_t asked[] = {limits.pids, limits.memoryBytes, limits.cpuSeconds};
  std::vector<std::string> parents;  // the hierarchy of each directory, in dirs_ order
  for (auto c : kControllers) {
    if (asked[static_cast<unsigned>(c)] == 0) continue;
    const auto* h = std::get_if<CgroupHierarchy>(&where.of(c));
    if (!h) return std::string("no usable ") + cgroupControllerName(c) + " cgroup: " + std::get<std::string>(where.of(c));
    std::size_t i = 0;
    while (i < parents.size() && parents[i] != h->ownCgroupDir) ++i;
    if (i < parents.size()) {
      cgroup.dirs_[i].controllers |= bit(c);
      continue;
    }
    sweepAbandoned(h->ownCgroupDir);
    Dir dir;
    dir.mechanism = h->mechanism;
    dir.controllers = bit(c);
    for (int attempt = 0;; ++attempt) {
      std::string path = h->ownCgroupDir + "/stockade-" + std::to_string(::getpid()) + "-" +
                         std::to_string(gNextCgroup.fetch_add(1));
      if (::mkdir(path.c_str(), 0755) == 0) {
        dir.path = std::move(path);
        break;
      }
      // EEXIST: left by an earlier supervisor with our pid; take the next name.
      if (errno != EEXIST || attempt == 16) return "mkdir(\"" + path + "\", 0755) failed: " + errnoText(errno);
    }
    dir.fd.reset(::open(dir.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.fd) {
      std::string error = "open(\"" + dir.path + "\", O_DIRECTORY) failed: " + errnoText(errno);
      ::rmdir(dir.path.c_str());
      return error;
    }
    cgroup.dirs_.push_back(std::move(dir));
    parents.push_back(h->ownCgroupDir);
  }
  const bool swap = hostHasSwap();
  for (const auto& d : cgroup.dirs_) {
    const int fd = d.fd.get();
    std::string error;
    if (d.controllers & bit(CgroupController::kPids)) {
      // The sandbox's init is one task in the cgroup; the program gets `pids`.
      const std::string max = limits.pids >= kPidMaxLimit ? "max" : std::to_string(limits.pids + 1);
      if (writeFile(fd, d.path, "pids.max", max, error) == ENOENT) error += "; the pids controller is not enabled for this cgroup";
      if (!error.empty()) return error;
    }
    if (d.controllers & bit(CgroupController::kMemory)) {
      const std::string bytes = std::to_string(limits.memoryBytes);
      const bool v2 = d.mechanism == LimitMechanism::kCgroup2;
      if (writeFile(fd, d.path, v2 ? "memory.max" : "memory.limit_in_bytes", bytes, error) != 0) return error;
      // Swap inside the limit: none at all in cgroup2 (a limit of its own
      // there); memory + swap together in v1, set after the memory limit
      // (it may not be below it). No swap file: not accounted, fine without swap.
      int err = v2 ? writeFile(fd, d.path, "memory.swap.max", "0", error)
                   : writeFile(fd, d.path, "memory.memsw.limit_in_bytes", bytes, error);
      if (err == ENOENT && swap) error += "; the host has swap and the memory controller does not account it";
      if (err != 0 && (err != ENOENT || swap)) return error;
      // Over the limit, the OOM killer kills the whole sandbox, not one task
      // (v1 has no such knob: the supervisor does it, needsWatching()).
      if (v2 && writeFile(fd, d.path, "memory.oom.group", "1", error) != 0) return error;
      // Socket buffers: cgroup2 charges them to memory.max; v1 charges them
      // nowhere unless the cgroup's TCP counter has a limit, and then every
      // socket its tasks make (UDP too, despite the name) draws on that
      // counter. Without it, datagrams left unread on the sandbox's own
      // loopback held 255 MiB of kernel memory under memoryBytes 64 MiB, and
      // more with more sockets, up to the host-wide net.ipv4.udp_mem, beyond
      // which every UDP socket of the host drops what it receives. Set before
      // any task joins: a socket is tied to its counter when it is made.
      if (!v2 && writeFile(fd, d.path, "memory.kmem.tcp.limit_in_bytes", bytes, error) != 0)
        return error + "; without it the sandbox's socket buffers would be outside limits.memoryBytes";
    }
  }
  return cgroup;
}

std::variant<std::vector<UniqueFd>, std::string> SandboxCgroup::openForSelfJoin() const {
  std::vector<UniqueFd> out;
  for (const auto& d : dirs_) {
    if (d.mechanism != LimitMechanism::kCgroupV1) continue;
    UniqueFd tasks(::openat(d.fd.get(), "tasks", O_WRONLY | O_CLOEXEC));
    if (!tasks) return "open(\"" + d.path + "/tasks\", O_WRONLY) failed: " + errnoText(errno);
    out.push_back(std::move(tasks));
  }
  return out;
}

bool SandboxCgroup::needsWatching() const noexcept {
  return limits_.cpuSeconds != 0 ||
         (limits_.memoryBytes != 0 && mechanismOf(CgroupController::kMemory) == LimitMechanism::kCgroupV1);
}

std::variant<CgroupUsage, std::string> SandboxCgroup::usage() const {
  struct Counter {
    CgroupController controller;
    const char* v2File;
    const char* v1File;
    const char* key;  // the line's key; v1 cpuacct.usage is a bare number
  };
  static constexpr Counter kCounters[] = {
      {CgroupController::kCpu, "cpu.stat", "cpuacct.usage", "usage_usec"},        // v2 us, v1 ns
      {CgroupController::kMemory, "memory.events", "memory.oom_control", "oom_kill"},
      {CgroupController::kPids, "pids.events", "pids.events", "max"},
  };
  CgroupUsage usage;
  for (const auto& counter : kCounters) {
    const Dir* d = dirOf(counter.controller);
    if (!d) continue;
    const bool v2 = d->mechanism == LimitMechanism::kCgroup2;
    const char* file = v2 ? counter.v2File : counter.v1File;
    auto text = readCounter(d->fd.get(), file);
    if (auto* err = std::get_if<int>(&text)) return "read(\"" + d->path + "/" + file + "\") failed: " + errnoText(*err);
    const std::string& t = std::get<std::string>(text);
    std::optional<std::uint64_t> value;
    if (counter.controller == CgroupController::kCpu && !v2) {
      std::uint64_t ns = 0;
      if (std::from_chars(t.data(), t.data() + t.size(), ns).ec == std::errc()) value = ns;
    } else {
      value = keyedValue(t, counter.key);
    }
    if (!value) return "\"" + d->path + "/" + file + "\" has no " + counter.key + " count: \"" + trimmed(t) + "\"";
    switch (counter.controller) {
      case CgroupController::kCpu: usage.cpuNanoseconds = v2 ? *value * 1000 : *value; break;
      case CgroupController::kMemory: usage.oomKills = *value; break;
      case CgroupController::kPids: usage.forksRefused = *value; break;
    }
  }
  return usage;
}

std::optional<std::string> SandboxCgroup::remove() const {
  // An exiting task may still be counted for a moment after it was reaped
  // (rmdir() says EBUSY); not seen on 6.18, so the wait is short (100 ms).
  for (const auto& d : dirs_) {
    for (int attempt = 0;; ++attempt) {
      if (::rmdir(d.path.c_str()) == 0 || errno == ENOENT) break;
      if (errno != EBUSY || attempt == 100) return "rmdir(\"" + d.path + "\") failed: " + errnoText(errno);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return std::nullopt;
}

std::variant<PreparedCgroup, std::string> prepareSandboxCgroup(const CgroupControllers& where,
                                                               const CgroupLimits& limits) {
  auto created = SandboxCgroup::create(where, limits);
  if (auto* e = std::get_if<std::string>(&created)) return std::move(*e);
  PreparedCgroup out{std::get<SandboxCgroup>(std::move(created)), {}};
  auto tasks = out.cgroup.openForSelfJoin();
  if (auto* e = std::get_if<std::string>(&tasks)) return std::move(*e);
  out.selfJoin = std::get<std::vector<UniqueFd>>(std::move(tasks));
  return out;
}

bool joinCgroups(const int* tasksFds, int count, ChildError& error) noexcept {
  for (int i = 0; i < count; ++i) {
    if (tasksFds[i] < 0) continue;
    // "0": the writer itself; through "tasks", that thread alone, which lets
    // the kernel skip the global threadgroup lock (cgroup_procs_write_start()).
    if (sys::write(tasksFds[i], "0", 1) != 1) {
      error.add("write(<sandbox cgroup>/tasks, \"0\")");
      return error.fail(SetupStep::kCgroup);
    }
    sys::close(tasksFds[i]);
  }
  return true;
}

}  // namespace stockade::platform
