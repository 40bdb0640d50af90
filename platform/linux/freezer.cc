#include "platform/linux/freezer.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "platform/linux/cgroup.h"
#include "platform/linux/kernel_abi.h"

namespace stockade::platform {
namespace {

using Clock = std::chrono::steady_clock;
namespace abi = linux_abi;

std::optional<std::string> readText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// write(2) of `text` to an existing file; errno on failure.
int writeText(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  UniqueFd owned(fd);
  if (::write(fd, text.data(), text.size()) < 0) return errno;
  return 0;
}

std::optional<ProcStat> statOf(pid_t pid) {
  auto text = readText("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return std::nullopt;
  return parseProcStat(*text);
}

int pidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }  // Linux 5.3

// The process's path in the v1 freezer hierarchy ("/a/b"), from /proc/<pid>/cgroup.
std::optional<std::string> freezerPathOf(pid_t pid) {
  auto text = readText("/proc/" + std::to_string(pid) + "/cgroup");
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    auto first = line.find(':');
    auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    if (controllers.find(",freezer,") != std::string::npos) return line.substr(second + 1);
  }
  return std::nullopt;
}

std::atomic<unsigned> freezeCounter{0};

// The v1 freezer hierarchy as this process sees it.
struct FreezerHierarchy {
  std::string root;     // the hierarchy's root directory
  std::string ownPath;  // our cgroup's path in it
};
std::optional<FreezerHierarchy> findFreezer() {
  auto mountinfo = readText("/proc/self/mountinfo");
  auto cgroup = readText("/proc/self/cgroup");
  auto own = freezerPathOf(::getpid());
  if (!mountinfo || !cgroup || !own) return std::nullopt;
  auto dir = v1CgroupDir("freezer", *mountinfo, *cgroup);
  if (!dir) return std::nullopt;
  std::string suffix = *own == "/" ? "" : *own;
  if (!dir->ends_with(suffix)) return std::nullopt;
  return FreezerHierarchy{dir->substr(0, dir->size() - suffix.size()), *own};
}

std::string cgroupDir(const FreezerHierarchy& h, const std::string& path) { return h.root + (path == "/" ? "" : path); }

bool stopped(char state) { return state == 'T' || state == 't'; }
bool dead(char state) { return state == 'Z' || state == 'X'; }

// True when `a` and `b` share one address space (kcmp KCMP_VM, Linux 3.5).
bool shareMemory(pid_t a, pid_t b) { return ::syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0) == 0; }

}  // namespace

const char* freezeMethodName(FreezeMethod method) noexcept {
  return method == FreezeMethod::kCgroupV1Freezer ? "cgroup-v1-freezer" : "sigstop";
}

std::optional<ProcStat> parseProcStat(std::string_view text) {
  // pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt
  // majflt cmajflt utime stime cutime cstime priority nice num_threads
  // itrealvalue starttime ...
  auto open = text.find(" (");
  auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  ProcStat s;
  if (std::from_chars(text.data(), text.data() + open, s.pid).ec != std::errc()) return std::nullopt;
  std::vector<std::string_view> fields;
  std::string_view rest = text.substr(close + 1);
  while (!rest.empty()) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    auto space = rest.find(' ');
    if (!rest.empty()) fields.push_back(rest.substr(0, space));
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space);
  }
  // fields[0] is state (field 3); starttime is field 22.
  if (fields.size() < 20 || fields[0].size() != 1) return std::nullopt;
  s.state = fields[0][0];
  if (std::from_chars(fields[1].data(), fields[1].data() + fields[1].size(), s.ppid).ec != std::errc()) return std::nullopt;
  if (std::from_chars(fields[19].data(), fields[19].data() + fields[19].size(), s.starttime).ec != std::errc())
    return std::nullopt;
  return s;
}

std::vector<ProcStat> descendantsOf(const std::vector<ProcStat>& all, const std::vector<pid_t>& roots) {
  std::unordered_multimap<pid_t, const ProcStat*> children;
  std::unordered_map<pid_t, const ProcStat*> byPid;
  for (const auto& p : all) {
    children.emplace(p.ppid, &p);
    byPid.emplace(p.pid, &p);
  }
  std::vector<ProcStat> out;
  std::set<pid_t> seen;
  std::vector<pid_t> todo;
  for (pid_t r : roots)
    if (byPid.count(r) && seen.insert(r).second) todo.push_back(r);
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    out.push_back(*byPid.at(p));
    auto [a, b] = children.equal_range(p);
    for (auto it = a; it != b; ++it)
      if (seen.insert(it->second->pid).second) todo.push_back(it->second->pid);
  }
  return out;
}

std::vector<ProcStat> listProcesses() {
  std::vector<ProcStat> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    pid_t pid = 0;
    std::string_view name = e->d_name;
    if (std::from_chars(name.data(), name.data() + name.size(), pid).ec != std::errc()) continue;
    if (auto s = statOf(pid)) out.push_back(*s);
  }
  ::closedir(d);
  return out;
}

// --- FrozenProcesses ---------------------------------------------------------

FrozenProcesses::FrozenProcesses(FrozenProcesses&& o) noexcept
    : method_(o.method_),
      processes_(std::move(o.processes_)),
      cgroupDir_(std::move(o.cgroupDir_)),
      thawed_(std::exchange(o.thawed_, true)) {}

FrozenProcesses& FrozenProcesses::operator=(FrozenProcesses&& o) noexcept {
  if (this != &o) {
    thaw();
    method_ = o.method_;
    processes_ = std::move(o.processes_);
    cgroupDir_ = std::move(o.cgroupDir_);
    thawed_ = std::exchange(o.thawed_, true);
  }
  return *this;
}

FrozenProcesses::~FrozenProcesses() { thaw(); }

std::optional<SysError> FrozenProcesses::thaw() {
  if (thawed_) return std::nullopt;
  thawed_ = true;
  std::optional<SysError> first;
  auto note = [&](SysError e) {
    if (!first) first = std::move(e);
  };
  if (method_ == FreezeMethod::kSigstop) {
    for (auto& p : processes_) {
      if (p.wasStopped) continue;
      if (abi::pidfdSendSignal(p.pidfd.get(), SIGCONT) != 0 && errno != ESRCH)
        note(SysError{"pidfd_send_signal(" + std::to_string(p.stat.pid) + ", SIGCONT)", errno});
    }
    return first;
  }
  // The freezer: each process back where it came from thaws on arrival.
  auto h = findFreezer();
  if (!h) return SysError{"finding the freezer hierarchy again to thaw", ENOENT};
  std::string fallback = processes_.empty() ? h->ownPath : processes_.front().originalCgroup;
  for (int round = 0; round < 100; ++round) {
    for (const auto& p : processes_) {
      int e = writeText(cgroupDir(*h, p.originalCgroup) + "/cgroup.procs", std::to_string(p.stat.pid));
      if (e && e != ESRCH) note(SysError{"write(" + cgroupDir(*h, p.originalCgroup) + "/cgroup.procs)", e});
    }
    // Anything else in ours (a process we did not see) goes with the first.
    auto left = readText(cgroupDir_ + "/cgroup.procs").value_or("");
    std::istringstream pids(left);
    std::string pid;
    bool any = false;
    while (pids >> pid) {
      any = true;
      writeText(cgroupDir(*h, fallback) + "/cgroup.procs", pid);
    }
    if (!any && ::rmdir(cgroupDir_.c_str()) == 0) return first;
    if (!any && errno != EBUSY) {
      note(SysError{"rmdir(" + cgroupDir_ + ")", errno});
      return first;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  note(SysError{"rmdir(" + cgroupDir_ + ") after moving every process out", EBUSY});
  return first;
}

// --- freezing ------------------------------------------------------------------

namespace {

std::optional<FreezeFailure> pastDeadline(Clock::time_point deadline, const char* during) {
  if (Clock::now() <= deadline) return std::nullopt;
  return FreezeFailure{FreezeFailure::Kind::kTimeout, std::string("the deadline passed while ") + during};
}

bool recorded(const std::vector<ProcStat>& have, const ProcStat& p) {
  return std::any_of(have.begin(), have.end(),
                     [&](const ProcStat& s) { return s.pid == p.pid && s.starttime == p.starttime; });
}

}  // namespace

std::variant<FrozenProcesses, FreezeFailure> freezeProcessTrees(const std::function<std::vector<pid_t>()>& roots,
                                                                FreezePreference preference,
                                                                Clock::time_point quiescentBy,
                                                                Clock::time_point deadline) {
  FrozenProcesses f;
  std::optional<FreezerHierarchy> h;
  if (preference == FreezePreference::kBest) h = findFreezer();
  if (h) {
    std::string dir = cgroupDir(*h, h->ownPath) + "/stockade-freeze-" + std::to_string(::getpid()) + "-" +
                      std::to_string(freezeCounter.fetch_add(1));
    if (::mkdir(dir.c_str(), 0700) == 0) {
      f.method_ = FreezeMethod::kCgroupV1Freezer;
      f.cgroupDir_ = dir;
      f.thawed_ = false;
    } else {
      h.reset();  // not ours to use (an unprivileged user): SIGSTOP
    }
  }
  if (!h) {
    f.method_ = FreezeMethod::kSigstop;
    f.thawed_ = false;
  }
  const std::string ownFreezerPath = h ? f.cgroupDir_.substr(h->root.size()) : "";

  std::vector<ProcStat> have;  // what is frozen (or being)
  // Passes until one finds nothing new; the freezer is set FROZEN after the
  // first, so later passes only catch what forked meanwhile.
  for (int pass = 0;; ++pass) {
    if (auto t = pastDeadline(deadline, "freezing the sandbox's processes")) return *t;
    bool added = false;
    for (const ProcStat& p : descendantsOf(listProcesses(), roots())) {
      if (dead(p.state) || recorded(have, p)) continue;
      FrozenProcesses::Process rec{.stat = p};
      if (h) {
        auto from = freezerPathOf(p.pid);
        if (!from) continue;  // gone
        rec.originalCgroup = *from == ownFreezerPath
                                 ? (f.processes_.empty() ? h->ownPath : f.processes_.front().originalCgroup)
                                 : *from;
        if (*from != ownFreezerPath) {
          int e = writeText(f.cgroupDir_ + "/cgroup.procs", std::to_string(p.pid));
          if (e == ESRCH) continue;
          if (e) return FreezeFailure{FreezeFailure::Kind::kError, "write(" + f.cgroupDir_ + "/cgroup.procs, " +
                                                                       std::to_string(p.pid) + ") failed: " + errnoName(e)};
        }
        // The pid may have been reused between the listing and the move: an
        // unrelated process goes straight back.
        auto now = statOf(p.pid);
        if (!now || now->starttime != p.starttime) {
          if (now) writeText(cgroupDir(*h, *from) + "/cgroup.procs", std::to_string(p.pid));
          continue;
        }
      } else {
        int fd = pidfdOpen(p.pid);
        if (fd < 0) continue;  // gone
        rec.pidfd.reset(fd);
        auto now = statOf(p.pid);
        if (!now || now->starttime != p.starttime) continue;  // not the process listed
        rec.wasStopped = stopped(now->state);
        if (!rec.wasStopped && abi::pidfdSendSignal(fd, SIGSTOP) != 0) {
          if (errno == ESRCH) continue;
          return FreezeFailure{FreezeFailure::Kind::kError,
                               "pidfd_send_signal(" + std::to_string(p.pid) + ", SIGSTOP) failed: " + errnoName(errno)};
        }
      }
      have.push_back(p);
      f.processes_.push_back(std::move(rec));
      added = true;
    }
    if (h && pass == 0) {
      if (int e = writeText(f.cgroupDir_ + "/freezer.state", "FROZEN"))
        return FreezeFailure{FreezeFailure::Kind::kError,
                             "write(" + f.cgroupDir_ + "/freezer.state, FROZEN) failed: " + errnoName(e)};
    }
    if (!added && pass > 0) break;
    // Wait until everything recorded has stopped.
    for (int attempt = 1;; ++attempt) {
      bool quiet = true;
      std::string holdout;
      if (h) {
        auto state = readText(f.cgroupDir_ + "/freezer.state").value_or("");
        quiet = state.starts_with("FROZEN");
        holdout = "the freezer cgroup is " + state.substr(0, state.find('\n'));
        if (!quiet) {
          // The v1 freezer can stay FREEZING for good while processes
          // arrive (forked, or moved in by a later pass): ask again, and
          // now and then thaw and freeze anew -- runc's remedy for the same
          // kernel behaviour (libcontainer/cgroups/fs/freezer.go). Seen
          // here: a shell loop's tree left FREEZING for 60 s.
          if (attempt % 50 == 0) {
            (void)writeText(f.cgroupDir_ + "/freezer.state", "THAWED");
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          if (int e = writeText(f.cgroupDir_ + "/freezer.state", "FROZEN"))
            return FreezeFailure{FreezeFailure::Kind::kError,
                                 "write(" + f.cgroupDir_ + "/freezer.state, FROZEN) failed: " + errnoName(e)};
        }
      } else {
        // A vfork() parent (posix_spawn(), a shell starting a command) sleeps
        // uninterruptibly until its child execs or exits, so a child stopped
        // before its exec holds the parent where it is: the parent's SIGSTOP
        // stays pending, and it runs nothing until the child is resumed (the
        // thaw's SIGCONT discards that pending stop). It counts as stopped.
        auto heldByVforkChild = [&](const ProcStat& parent) {
          if (parent.state != 'D') return false;
          return std::any_of(f.processes_.begin(), f.processes_.end(), [&](const FrozenProcesses::Process& c) {
            if (c.stat.ppid != parent.pid) return false;
            auto child = statOf(c.stat.pid);
            return child && child->starttime == c.stat.starttime && stopped(child->state) &&
                   shareMemory(parent.pid, c.stat.pid);
          });
        };
        for (const auto& p : f.processes_) {
          auto now = statOf(p.stat.pid);
          if (!now || now->starttime != p.stat.starttime || dead(now->state) || stopped(now->state)) continue;
          if (heldByVforkChild(*now)) continue;
          quiet = false;
          holdout = "process " + std::to_string(p.stat.pid) + " is in state " + std::string(1, now->state);
          break;
        }
      }
      if (quiet) break;
      if (auto t = pastDeadline(deadline, "waiting for the processes to stop")) {
        t->message += " (" + holdout + ")";
        return *t;
      }
      if (Clock::now() > quiescentBy)
        return FreezeFailure{FreezeFailure::Kind::kNotQuiescent,
                             std::to_string(f.processes_.size()) + " processes, not all stopped in time: " + holdout};
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return f;
}

}  // namespace stockade::platform
