// A fixture for tests of the process service: a live sandbox over a test
// directory, and helpers that unwrap ProcessResults and look at processes
// from the host.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "stockade/stockade.h"
#include "tests/support/manager_fixture.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {

template <typename T>
const T& ok(const ProcessResult<T>& r) {
  if (auto* e = std::get_if<ProcessError>(&r)) {
    ADD_FAILURE() << "ProcessError " << e->codeName() << ": " << e->message;
    throw std::runtime_error(e->message);
  }
  return std::get<T>(r);
}

template <typename T>
T take(ProcessResult<T>&& r) {
  (void)ok(r);
  return std::get<T>(std::move(r));
}

template <typename T>
ProcessErrorCode errorOf(const ProcessResult<T>& r) {
  if (!std::holds_alternative<ProcessError>(r)) {
    ADD_FAILURE() << "expected a ProcessError";
    return ProcessErrorCode::kUnavailable;
  }
  return std::get<ProcessError>(r).code;
}

// Host pids of every process in the pid namespace `nsLink` ("pid:[4026...]")
// whose namespace this user may read (a sandbox's init is not dumpable, so
// only root sees it; its children are).
inline std::vector<int> processesInNamespace(const std::string& nsLink) {
  std::vector<int> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    auto link = std::filesystem::read_symlink(entry.path() / "ns/pid", ec);
    if (!ec && link.string() == nsLink) out.push_back(std::stoi(name));
  }
  return out;
}

// The pid namespace of the sandbox whose init is `initPid`, read from its
// program (pid 2 inside), which unlike the init is dumpable.
inline std::string sandboxPidNamespace(int initPid) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream status(entry.path() / "status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("PPid:", 0) == 0) {
        if (std::stoi(line.substr(5)) == initPid) {
          std::error_code ec;
          auto link = std::filesystem::read_symlink(entry.path() / "ns/pid", ec);
          if (!ec) return link.string();
        }
        break;
      }
  }
  return {};
}

inline std::size_t countEntries(const std::string& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

// Processes whose parent is this test process (zombies included).
inline std::size_t childrenOfThisProcess() {
  std::size_t n = 0;
  const std::string self = std::to_string(::getpid());
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream status(entry.path() / "status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("PPid:", 0) == 0) {
        if (line.substr(line.find_first_not_of(" \t", 5)) == self) ++n;
        break;
      }
  }
  return n;
}

inline long rssKiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

class ProcessServiceTest : public ManagerFixture {
 protected:
  void SetUp() override {
    ManagerFixture::SetUp();
    SandboxManager::instance().setProcessLogLimits(1 << 20, 64u << 20);
    handle_.emplace(SandboxManager::instance().createSandbox(policy()));
  }
  SandboxPolicy policy() {
    return SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[],"allowRead":[],"allowWrite":[")" + work_ +
                                   R"("],"denyWrite":[]},"network":{"allowedDomains":[]},"env":{"allow":["PATH"]}})");
  }
  ProcessService service() { return handle_->processes(); }
  ProcessStartOptions inWork() {
    ProcessStartOptions o;
    o.cwd = work_;
    return o;
  }
  ProcessHandle startSh(const std::string& script, ProcessStartOptions o) {
    if (!o.cwd) o.cwd = work_;
    return ok(service().start(ProcessCommand::shell(script), o));
  }
  ProcessHandle startSh(const std::string& script) { return startSh(script, inWork()); }
  // Every retained byte of one channel, paging with `limit`.
  static std::string channelText(const ProcessHandle& h, LogChannel channel) {
    std::string out;
    std::optional<std::string> cursor;
    for (;;) {
      auto page = ok(h.logs({.cursor = cursor, .limit = 1000}));
      for (const auto& f : page.items)
        if (f.channel == channel) out += f.data;
      if (!page.hasMore) return out;
      cursor = page.nextCursor;
    }
  }

  TempDir t_;
  std::string work_ = t_.dir("work");
  std::string outside_ = t_.dir("outside");
  std::optional<SandboxHandle> handle_;
};

}  // namespace stockade::testing
