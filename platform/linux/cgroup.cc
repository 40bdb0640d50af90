// ASYNC-SIGNAL-SAFE: joinPidsCgroup() only (it runs between clone and
// exec). Everything else runs in the parent.
#include "platform/linux/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace stockade::platform {
namespace {

// The kernel's PID_MAX_LIMIT on 64-bit (include/linux/threads.h): pids.max
// accepts 0..PID_MAX_LIMIT or "max".
constexpr std::uint64_t kPidMaxLimit = 4 * 1024 * 1024;

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

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescapeOctal(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

struct CgroupMount {
  std::string root;        // the subtree of the hierarchy mounted here
  std::string mountPoint;
  std::string fsType;      // "cgroup2" or "cgroup"
  std::string superOptions;
};

std::vector<CgroupMount> cgroupMounts(std::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (auto line : split(mountinfo, '\n')) {
    auto fields = split(line, ' ');
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    std::size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash + 3 >= fields.size()) continue;
    std::string_view fsType = fields[dash + 1];
    if (fsType != "cgroup2" && fsType != "cgroup") continue;
    out.push_back({unescapeOctal(fields[3]), unescapeOctal(fields[4]), std::string(fsType),
                   std::string(fields[dash + 3])});
  }
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

// May we create a child cgroup in `dir` (and, for cgroup2, move tasks through
// it)? nullopt: yes; else why not.
std::optional<std::string> creatable(const PidsHierarchy& h) {
  if (::faccessat(AT_FDCWD, h.ownCgroupDir.c_str(), W_OK | X_OK, AT_EACCESS) != 0)
    return "cannot create a cgroup there: access(W_OK) failed: " + errnoText(errno);
  // Moving a task in cgroup2 needs write access to the common ancestor's
  // cgroup.procs: ours.
  if (h.mechanism == PidsMechanism::kCgroup2 &&
      ::faccessat(AT_FDCWD, (h.ownCgroupDir + "/cgroup.procs").c_str(), W_OK, AT_EACCESS) != 0)
    return "cannot move tasks there: access(\"cgroup.procs\", W_OK) failed: " + errnoText(errno);
  return std::nullopt;
}

std::optional<std::string> unusableReason(const PidsHierarchy& h) {
  if (h.mechanism == PidsMechanism::kCgroup2) {
    auto controllers = readSmallFile(h.ownCgroupDir + "/cgroup.controllers");
    if (!controllers) return "cannot read cgroup.controllers";
    if (!hasToken(trimmed(*controllers), "pids", ' '))
      return "the pids controller is not available (cgroup.controllers: \"" + trimmed(*controllers) + "\")";
    auto subtree = readSmallFile(h.ownCgroupDir + "/cgroup.subtree_control");
    if (!subtree) return "cannot read cgroup.subtree_control";
    if (!hasToken(trimmed(*subtree), "pids", ' '))
      return "pids is not enabled for child cgroups (cgroup.subtree_control: \"" + trimmed(*subtree) +
             "\"; a delegating manager writes \"+pids\" there)";
  }
  return creatable(h);
}

std::atomic<unsigned> gNextCgroup{0};

}  // namespace

const char* pidsMechanismName(PidsMechanism mechanism) noexcept {
  switch (mechanism) {
    case PidsMechanism::kNone: return "none";
    case PidsMechanism::kCgroup2: return "cgroup2";
    case PidsMechanism::kCgroupV1: return "cgroup-v1";
  }
  return "unknown";
}

std::vector<PidsHierarchy> pidsHierarchies(std::string_view mountinfo, std::string_view procCgroup) {
  std::optional<std::string> unifiedPath, pidsV1Path;
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
    else if (hasToken(controllers, "pids", ',')) pidsV1Path = path;
  }
  std::vector<PidsHierarchy> cgroup2, v1;
  auto add = [](std::vector<PidsHierarchy>& to, PidsMechanism m, std::string dir) {
    for (const auto& h : to)
      if (h.ownCgroupDir == dir) return;
    to.push_back({m, std::move(dir)});
  };
  for (const auto& mount : cgroupMounts(mountinfo)) {
    if (mount.fsType == "cgroup2" && unifiedPath) {
      if (auto dir = dirInMount(mount, *unifiedPath)) add(cgroup2, PidsMechanism::kCgroup2, *dir);
    } else if (mount.fsType == "cgroup" && pidsV1Path && hasToken(mount.superOptions, "pids", ',')) {
      if (auto dir = dirInMount(mount, *pidsV1Path)) add(v1, PidsMechanism::kCgroupV1, *dir);
    }
  }
  cgroup2.insert(cgroup2.end(), v1.begin(), v1.end());
  return cgroup2;
}

std::variant<PidsHierarchy, std::string> findPidsController() {
  auto mountinfo = readSmallFile("/proc/self/mountinfo");
  auto procCgroup = readSmallFile("/proc/self/cgroup");
  if (!mountinfo || !procCgroup) return std::string("cannot read /proc/self/mountinfo and /proc/self/cgroup");
  auto candidates = pidsHierarchies(*mountinfo, *procCgroup);
  std::string reasons;
  for (auto& h : candidates) {
    auto why = unusableReason(h);
    if (!why) return std::move(h);
    if (!reasons.empty()) reasons += "; ";
    reasons += std::string(pidsMechanismName(h.mechanism)) + " " + h.ownCgroupDir + ": " + *why;
  }
  if (candidates.empty()) return std::string("no cgroup hierarchy with the pids controller is mounted");
  return "no usable pids cgroup (" + reasons + "); run as root, or in a cgroup delegated to this user with pids enabled";
}

PidsCgroup& PidsCgroup::operator=(PidsCgroup&& other) noexcept {
  if (this != &other) {
    (void)remove();
    mechanism_ = std::exchange(other.mechanism_, PidsMechanism::kNone);
    path_ = std::move(other.path_);
    dir_ = std::move(other.dir_);
  }
  return *this;
}

PidsCgroup::~PidsCgroup() { (void)remove(); }

namespace {

// Removes the empty sandbox cgroups that supervisors which died without
// cleaning up (SIGKILL) left beside ours: `stockade-<pid>-<n>` whose pid is
// no longer alive. Once per process. A cgroup that still has tasks cannot be
// removed (EBUSY) and stays; a pid reused by another process keeps its
// directories until that process is gone too.
void sweepAbandoned(const std::string& dir) {
  static std::once_flag once;
  std::call_once(once, [&dir] {
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
  });
}

}  // namespace

std::variant<PidsCgroup, std::string> PidsCgroup::create(const PidsHierarchy& hierarchy, std::uint64_t maxTasks) {
  sweepAbandoned(hierarchy.ownCgroupDir);
  PidsCgroup cgroup;
  cgroup.mechanism_ = hierarchy.mechanism;
  for (int attempt = 0;; ++attempt) {
    std::string path = hierarchy.ownCgroupDir + "/stockade-" + std::to_string(::getpid()) + "-" +
                       std::to_string(gNextCgroup.fetch_add(1));
    if (::mkdir(path.c_str(), 0755) == 0) {
      cgroup.path_ = std::move(path);
      break;
    }
    // EEXIST: left by an earlier supervisor with our pid; take the next name.
    if (errno != EEXIST || attempt == 16) return "mkdir(\"" + path + "\", 0755) failed: " + errnoText(errno);
  }
  int dir = ::open(cgroup.path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    std::string error = "open(\"" + cgroup.path_ + "\", O_DIRECTORY) failed: " + errnoText(errno);
    ::rmdir(cgroup.path_.c_str());
    return error;
  }
  cgroup.dir_.reset(dir);  // from here the destructor removes the directory
  // The sandbox's init is one task in the cgroup; the program gets maxTasks.
  std::string value = maxTasks >= kPidMaxLimit ? "max" : std::to_string(maxTasks + 1);
  UniqueFd limit(::openat(dir, "pids.max", O_WRONLY | O_CLOEXEC));
  if (!limit) {
    std::string error = "open(\"" + cgroup.path_ + "/pids.max\", O_WRONLY) failed: " + errnoText(errno);
    if (errno == ENOENT) error += "; the pids controller is not enabled for this cgroup";
    return error;
  }
  if (::write(limit.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
    return "write(\"" + cgroup.path_ + "/pids.max\", \"" + value + "\") failed: " + errnoText(errno);
  return cgroup;
}

std::variant<UniqueFd, std::string> PidsCgroup::openForSelfJoin() const {
  UniqueFd tasks(::openat(dir_.get(), "tasks", O_WRONLY | O_CLOEXEC));
  if (!tasks) return "open(\"" + path_ + "/tasks\", O_WRONLY) failed: " + errnoText(errno);
  return tasks;
}

std::optional<std::string> PidsCgroup::remove() const {
  if (!valid()) return std::nullopt;
  // An exiting task may still be counted for a moment after it was reaped
  // (rmdir() says EBUSY); not seen on 6.18, so the wait is short (100 ms).
  for (int attempt = 0;; ++attempt) {
    if (::rmdir(path_.c_str()) == 0 || errno == ENOENT) return std::nullopt;
    if (errno != EBUSY || attempt == 100)
      return "rmdir(\"" + path_ + "\") failed: " + errnoText(errno);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::variant<SandboxPidsCgroup, std::string> prepareSandboxPidsCgroup(std::uint64_t maxTasks) {
  auto controller = findPidsController();
  if (auto* why = std::get_if<std::string>(&controller)) return std::move(*why);
  auto created = PidsCgroup::create(std::get<PidsHierarchy>(controller), maxTasks);
  if (auto* e = std::get_if<std::string>(&created)) return std::move(*e);
  SandboxPidsCgroup out{std::get<PidsCgroup>(std::move(created)), {}};
  if (out.cgroup.mechanism() == PidsMechanism::kCgroupV1) {
    auto tasks = out.cgroup.openForSelfJoin();
    if (auto* e = std::get_if<std::string>(&tasks)) return std::move(*e);
    out.selfJoin = std::get<UniqueFd>(std::move(tasks));
  }
  return out;
}

bool joinPidsCgroup(int tasksFd, ChildError& error) noexcept {
  if (tasksFd < 0) return true;
  // "0": the writer itself; through "tasks", that thread alone, which lets
  // the kernel skip the global threadgroup lock (cgroup_procs_write_start()).
  if (::write(tasksFd, "0", 1) != 1) {
    error.add("write(<pids cgroup>/tasks, \"0\")");
    return error.fail(SetupStep::kPidsCgroup);
  }
  ::close(tasksFd);
  return true;
}

}  // namespace stockade::platform
