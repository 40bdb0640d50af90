// A sandbox test bed: a fake home with secrets, a workspace, a directory
// outside it, a policy over them, and helpers that run sandbox_probe under the
// real `stockade run`. The tree lives under /var/tmp (the sandbox's /tmp is
// private, so a tree under /tmp would be invisible rather than masked).
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/read_file.h"
#include "tests/support/subprocess.h"

namespace stockade::testing {

inline std::string probeBinary() {
  const char* staged = std::getenv("STOCKADE_PROBE");  // tests/run_unprivileged.sh stages a copy
  return staged && *staged ? staged : STOCKADE_PROBE_PATH;
}

inline std::string testBase() {
  const char* base = std::getenv("STOCKADE_TEST_BASE");
  return base && *base ? base : "/var/tmp";
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = testBase() + "/stockade-sec-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << "mkdtemp under " << testBase();
    root_ = std::filesystem::canonical(tmpl).string();
    ::chmod(root_.c_str(), 0755);
    home = root_ + "/home";
    ws = root_ + "/ws";
    outside = root_ + "/outside";
    file(home + "/.ssh/id_ed25519", "SECRET-PRIVATE-KEY\n");
    file(home + "/.ssh/known_hosts", "KNOWN-HOSTS-LINE\n");
    file(home + "/notes.txt", "HOME-NOTES\n");
    file(ws + "/README", "WORKSPACE-README\n");
    file(ws + "/.bashrc", "ORIGINAL-BASHRC\n");
    file(ws + "/.git/HEAD", "ref: refs/heads/main\n");
    file(ws + "/.git/hooks/pre-commit", "ORIGINAL-HOOK\n");
    std::filesystem::create_directories(ws + "/.git/objects");
    std::filesystem::create_directories(ws + "/.git/refs");
    file(outside + "/target.txt", "OUTSIDE-ORIGINAL\n");
    // The build tree may itself lie under /tmp (a CI clone), which children
    // cannot see: run a copy of the probe from the test tree.
    probe_ = root_ + "/bin/sandbox_probe";
    std::filesystem::create_directories(root_ + "/bin");
    std::filesystem::copy_file(probeBinary(), probe_);
    std::filesystem::permissions(probe_, std::filesystem::perms(0755));
    policy = {
        {"filesystem",
         {{"denyRead", {home + "/.ssh", "/etc/shadow"}},
          {"allowRead", {home + "/.ssh/known_hosts"}},
          {"allowWrite", {ws}},
          {"denyWrite", nlohmann::json::array()}}},
        {"env", {{"allow", {"PATH", "HOME"}}}},
    };
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  static void file(const std::string& path, const std::string& content) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << content;
  }
  static std::string slurp(const std::string& path) { return readWholeFile(path); }

  // `stockade run --policy <current policy> --cwd ws FLAGS --`
  std::vector<std::string> stockadeArgv(const std::vector<std::string>& flags = {}) {
    std::string policyPath = root_ + "/policy.json";
    std::ofstream(policyPath) << policy.dump();
    std::vector<std::string> argv = {stockadeBinary(), "run", "--policy", policyPath, "--cwd", ws};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    return argv;
  }
  // Runs the probe under `stockade run` with the current policy. A probe that
  // died of a signal proved nothing (a crash is not a refusal): that fails
  // the test here, whatever the test then checks -- unless stockade names a
  // limit on stderr (the limit that killed the sandbox, or the per-process
  // rlimit it fell back to), which is the refusal a limit test expects.
  ProcessResult probe(const std::vector<std::string>& args, const std::vector<std::string>& flags = {}) {
    auto argv = stockadeArgv(flags);
    argv.push_back(probe_);
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = runProcess(argv);
    if (r.exitCode >= 128 && r.err.find("limits.") == std::string::npos)
      ADD_FAILURE() << "sandbox_probe " << (args.empty() ? "" : args[0]) << " died of signal " << r.exitCode - 128
                    << ": a crash is not a refusal\n" << r.err;
    return r;
  }

  // The `denial` events of an --audit file, one per call the seccomp filter
  // refused through stockade's listener.
  static std::vector<nlohmann::json> auditEvents(const std::string& path, const std::string& kind) {
    std::vector<nlohmann::json> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      auto e = nlohmann::json::parse(line, nullptr, false);
      if (!e.is_discarded() && e.value("event", "") == kind) out.push_back(std::move(e));
    }
    return out;
  }

  // The probe's call came back EPERM *from the seccomp filter*: the run's
  // audit has a denial event naming `syscall`. A call that fails for lack of
  // capabilities, or in the kernel for any other reason, has no such event.
  ::testing::AssertionResult refusedByTheFilter(const std::vector<std::string>& args, const std::string& syscall) {
    std::string audit = root_ + "/audit-" + std::to_string(auditRuns_++) + ".jsonl";
    auto r = probe(args, {"--audit", audit});
    if (r.exitCode != 1 || r.out.find("errno=EPERM") == std::string::npos)
      return ::testing::AssertionFailure() << args[0] << ": exit " << r.exitCode << ", " << r.out << r.err;
    for (const auto& d : auditEvents(audit, "denial"))
      if (d.value("syscall", "") == syscall && d.value("layer", "") == "seccomp") return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << args[0] << ": EPERM, but no denial event names " << syscall
                                         << " (refused by something other than the filter)";
  }

  std::string root_;
  int auditRuns_ = 0;
  std::string probe_;  // a copy of sandbox_probe inside the test tree
  std::string home, ws, outside;
  nlohmann::json policy;
};

}  // namespace stockade::testing
