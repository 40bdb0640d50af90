// `stockade run` as a user runs it: exit codes, stdio, environment, timeout,
// audit log, argument validation. Real children under the default policy.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {
namespace {

std::vector<std::string> run(std::vector<std::string> args) {
  std::vector<std::string> argv = {stockadeBinary(), "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

class RunCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = "/var/tmp/stockade-cli-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = std::filesystem::canonical(tmpl).string();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;  // the child's cwd, writable under the default policy
  // The audit log lies outside every writable tree (stockade refuses one inside).
  TempDir logs_;
  std::string audit_ = logs_ / "audit.jsonl";
};

TEST_F(RunCliTest, PassesStdinAndStdoutThroughAndReturnsTheChildsExitCode) {
  auto r = runProcess(run({"--cwd", dir_, "--", "/bin/sh", "-c", "cat; echo err >&2; exit 7"}), "hello\n");
  EXPECT_EQ(r.exitCode, 7);
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_EQ(r.err, "err\n");
}

// `stockade run` is one thread: the main thread spawns and runs the
// supervisor's loop (event_loop.h, Thread::kCaller), so no write of the CLI
// to memory it shares copy-on-write with the sandbox's init needs a TLB
// shootdown on another CPU. Seen from outside, while its child runs.
TEST_F(RunCliTest, TheCommandIsOneThreadWhileItsChildRuns) {
  const std::string cli = stockadeBinary();
  auto r = runProcess({"/bin/sh", "-c",
                       "'" + cli + "' run --cwd '" + dir_ + "' -- /bin/sh -c 'echo started; sleep 2' & p=$!; "
                       "sleep 0.5; ls /proc/$p/task | wc -l; wait $p"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "started\n1\n") << r.err;
}

TEST_F(RunCliTest, DeathBySignalExitsWith128PlusTheSignal) {
  EXPECT_EQ(runProcess(run({"--cwd", dir_, "--", "/bin/sh", "-c", "kill -KILL $$"})).exitCode, 137);
  EXPECT_EQ(runProcess(run({"--cwd", dir_, "--", "/bin/sh", "-c", "kill -TERM $$"})).exitCode, 143);
}

TEST_F(RunCliTest, AMissingProgramExits127AndANonExecutableOne126) {
  auto missing = runProcess(run({"--cwd", dir_, "--", "no-such-program-stockade"}));
  EXPECT_EQ(missing.exitCode, 127);
  EXPECT_NE(missing.err.find("not found"), std::string::npos) << missing.err;
  std::ofstream(dir_ + "/script") << "#!/bin/sh\necho hi\n";
  auto notExec = runProcess(run({"--cwd", dir_, "--", dir_ + "/script"}));
  EXPECT_EQ(notExec.exitCode, 126);
  EXPECT_NE(notExec.err.find("EACCES"), std::string::npos) << notExec.err;
}

// A program name or working directory an agent took from elsewhere is a
// value in stockade's messages: written raw, its ESC sequences and line
// breaks reached the operator's terminal (and forged lines). Every line on
// stderr starts with "stockade" and no control character arrives raw.
TEST_F(RunCliTest, ControlCharactersInTheProgramAndCwdReachStderrEscaped) {
  const std::string evil = "/no-such\x1b]0;owned\x07\x1b[2J\nstockade run: forged\xc2\x9b";
  for (const auto& argv : {run({"--cwd", dir_, "--", evil}), run({"--cwd", evil, "--", "/bin/true"})}) {
    auto r = runProcess(argv);
    EXPECT_NE(r.exitCode, 0);
    EXPECT_NE(r.err.find("\\x1b]0;owned\\x07\\x1b[2J\\x0astockade run: forged\\xc2\\x9b"), std::string::npos) << r.err;
    for (std::size_t i = 0; i + 1 < r.err.size(); ++i) {
      const auto c = static_cast<unsigned char>(r.err[i]);
      EXPECT_FALSE((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || (c == 0xc2 && (r.err[i + 1] & 0xe0) == 0x80))
          << "raw control byte " << int(c) << " at " << i << " in: " << r.err;
    }
    for (std::size_t at = 0; at < r.err.size(); at = r.err.find('\n', at) + 1) {
      EXPECT_EQ(r.err.compare(at, 8, "stockade"), 0) << "a line not stockade's: " << r.err.substr(at);
      if (r.err.find('\n', at) == std::string::npos) break;
    }
  }
  // The neighbour: a plain name is still named plainly.
  auto plain = runProcess(run({"--cwd", dir_, "--", "/no-such-program"}));
  EXPECT_NE(plain.err.find("\"/no-such-program\": not found"), std::string::npos) << plain.err;
}

TEST_F(RunCliTest, TheDefaultPolicysDotInASystemDirectoryIsRefusedNamingTheEntryAndTheFix) {
  // The default policy writes to ".": from /etc that would be the host's
  // configuration, from / every path (which the mounts cannot honour anyway),
  // from /opt the host's add-on software.
  std::vector<std::string> cwds = {"/etc", "/"};
  if (std::filesystem::is_directory("/opt")) cwds.push_back("/opt");
  for (const std::string& cwd : cwds) {
    const std::string target = (cwd == "/" ? "" : cwd) + "/stockade-owned-" + std::to_string(::getpid());
    auto r = runProcess(run({"--cwd", cwd, "--", "/bin/touch", target}));
    EXPECT_EQ(r.exitCode, 125) << cwd << ": " << r.err;
    EXPECT_NE(r.err.find("filesystem.allowWrite[0]: \".\" resolves to \"" + cwd + "\""), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("allowWriteSystemPaths"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("as the working directory, --cwd"), std::string::npos) << "the CLI's own flag: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(target)) << target;
  }
  // The allowed neighbour: the same program from a project directory writes.
  auto ok = runProcess(run({"--cwd", dir_, "--", "/bin/touch", dir_ + "/made"}));
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/made"));
}

// allowWrite inside a denyWrite tree: the deny wins, the child can write
// nothing there, and `policy check` and `run` both refuse it naming the two
// entries (the rules once listed it as writable). The neighbour: the deny
// inside the writable tree runs, and writes beside it.
TEST_F(RunCliTest, AWritableTreeInsideADenyWriteTreeIsRefusedByCheckAndRun) {
  std::filesystem::create_directories(dir_ + "/gen/sub");
  const std::string dead = dir_ + "/dead.json", ok = dir_ + "/ok.json";
  std::ofstream(dead) << R"({"filesystem":{"denyRead":[],"allowRead":[],"allowWrite":[")" << dir_ << R"(",")" << dir_
                      << R"(/gen/sub"],"denyWrite":[")" << dir_ << R"(/gen"]}})";
  std::ofstream(ok) << R"({"filesystem":{"denyRead":[],"allowRead":[],"allowWrite":[")" << dir_
                    << R"("],"denyWrite":[")" << dir_ << R"(/gen"]}})";
  const std::string said = "filesystem.allowWrite[1]: \"" + dir_ + "/gen/sub\" lies inside the write-denied \"" + dir_ +
                           "/gen\" (filesystem.denyWrite[0])";
  auto checked = runProcess({stockadeBinary(), "policy", "check", dead});
  EXPECT_EQ(checked.exitCode, 2) << checked.out << checked.err;
  EXPECT_NE(checked.err.find(said), std::string::npos) << checked.err;
  auto r = runProcess(run({"--policy", dead, "--cwd", dir_, "--", "/bin/touch", dir_ + "/gen/sub/f"}));
  EXPECT_EQ(r.exitCode, 125) << r.err;
  EXPECT_NE(r.err.find(said), std::string::npos) << r.err;
  auto fine = runProcess(run({"--policy", ok, "--cwd", dir_, "--", "/bin/sh", "-c",
                              "touch gen/sub/f; touch top && echo wrote"}));
  EXPECT_EQ(fine.exitCode, 0) << fine.err;
  EXPECT_EQ(fine.out, "wrote\n") << fine.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/gen/sub/f"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/top"));
}

// A writable tree the host does not have yet, outside every other writable
// tree: nothing to bind, so its nearest directory the host has is brokered
// for it, and the child can make it (mkdir -p) and write in it -- but
// nothing else there: a file or another directory beside it, a symlink or a
// rename on the way fail as before (EROFS), and the host keeps only what the
// child made on the way. With no such directory the sandbox shows (the
// path's first component missing from "/"), the spawn is refused naming the
// entry (exit 125, the program never runs), and `policy check` says so too.
TEST_F(RunCliTest, AMissingWritableTreeIsMadeByTheChildAndNothingBesideIt) {
  const std::string ws = dir_ + "/ws", ro = dir_ + "/ro", entry = dir_ + "/ro/a/b";
  std::filesystem::create_directories(ws);
  std::filesystem::create_directories(ro);
  const std::string policy = dir_ + "/p.json";
  std::ofstream(policy) << R"({"filesystem":{"denyRead":[],"allowRead":[],"allowWrite":[".",")" << entry
                        << R"("],"denyWrite":[]}})";
  auto checked = runProcess({stockadeBinary(), "policy", "check", "--cwd", ws, policy});
  EXPECT_EQ(checked.exitCode, 0) << checked.out << checked.err;
  auto r = runProcess(run({"--policy", policy, "--cwd", ws, "--", "/bin/sh", "-c",
                           "touch " + ro + "/a 2>/dev/null && echo file-on-the-way; "
                           "mkdir -p " + entry + "/deeper && echo x > " + entry + "/deeper/f && echo made; "
                           "touch " + ro + "/beside 2>/dev/null && echo beside; "
                           "mkdir " + ro + "/a/other 2>/dev/null && echo other-dir; "
                           "ln -s / " + ro + "/a/link 2>/dev/null && echo link; "
                           "mv " + ro + "/a " + ro + "/moved 2>/dev/null && echo moved; "
                           "touch " + ro + "/errno 2>&1 | grep -q 'Read-only file system' && echo erofs"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "made\nerofs\n") << r.err;
  EXPECT_TRUE(std::filesystem::exists(entry + "/deeper/f"));
  std::vector<std::string> onHost;
  for (const auto& e : std::filesystem::recursive_directory_iterator(ro)) onHost.push_back(e.path().string());
  std::sort(onHost.begin(), onHost.end());
  EXPECT_EQ(onHost, (std::vector<std::string>{ro + "/a", entry, entry + "/deeper", entry + "/deeper/f"}));

  const std::string nowhere = "/stockade-missing-" + std::to_string(::getpid()) + "/x";
  std::ofstream(policy) << R"({"filesystem":{"denyRead":[],"allowRead":[],"allowWrite":[".",")" << nowhere
                        << R"("],"denyWrite":[]}})";
  auto refused = runProcess(run({"--policy", policy, "--cwd", ws, "--", "/bin/sh", "-c", "echo ran"}));
  EXPECT_EQ(refused.exitCode, 125) << refused.err;
  EXPECT_EQ(refused.out, "") << "the program ran";
  const std::string said = "filesystem.allowWrite \"" + nowhere + "\": does not exist on the host";
  EXPECT_NE(refused.err.find(said), std::string::npos) << refused.err;
  auto invalid = runProcess({stockadeBinary(), "policy", "check", "--cwd", ws, policy});
  EXPECT_EQ(invalid.exitCode, 2) << invalid.out << invalid.err;
  EXPECT_NE(invalid.err.find("filesystem.allowWrite: \"" + nowhere + "\": does not exist on the host"),
            std::string::npos)
      << invalid.err;
}

TEST_F(RunCliTest, ATimeoutKillsTheWholeSandboxAndExits124) {
  // A background grandchild would keep a pipe open if it survived: the run
  // returning at all shows the whole process tree died.
  auto r = runProcess(run({"--cwd", dir_, "--timeout-ms", "300", "--", "/bin/sh", "-c", "sleep 60 & sleep 60"}));
  EXPECT_EQ(r.exitCode, 124);
  EXPECT_NE(r.err.find("timed out"), std::string::npos);
}

TEST_F(RunCliTest, OnlyAllowedEnvironmentReachesTheChildPlusOverlaysAndTmpdir) {
  ::setenv("STOCKADE_NOT_ALLOWED", "leak", 1);
  auto r = runProcess(run({"--cwd", dir_, "--env", "EXTRA=1", "--env", "HOME=/elsewhere", "--", "/usr/bin/env"}));
  ::unsetenv("STOCKADE_NOT_ALLOWED");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.find("STOCKADE_NOT_ALLOWED"), std::string::npos);
  EXPECT_NE(r.out.find("EXTRA=1\n"), std::string::npos);
  EXPECT_NE(r.out.find("HOME=/elsewhere\n"), std::string::npos);
  EXPECT_NE(r.out.find("TMPDIR=/tmp\n"), std::string::npos);
  EXPECT_NE(r.out.find("PATH="), std::string::npos);
}

TEST_F(RunCliTest, RunsInTheRequestedWorkingDirectory) {
  auto r = runProcess(run({"--cwd", dir_, "--", "/bin/pwd"}));
  EXPECT_EQ(r.out, dir_ + "\n");
}

TEST_F(RunCliTest, AnInvalidPolicyExits125NamingTheField) {
  std::ofstream(dir_ + "/bad.json") << R"({"filesystem": {"allowWrite": "not-a-list"}})";
  auto r = runProcess(run({"--policy", dir_ + "/bad.json", "--cwd", dir_, "--", "/bin/true"}));
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_NE(r.err.find("allowWrite"), std::string::npos) << r.err;
}

TEST_F(RunCliTest, BadArgumentsExit125) {
  EXPECT_EQ(runProcess(run({"--timeout-ms", "soon", "--", "/bin/true"})).exitCode, 125);
  EXPECT_EQ(runProcess(run({"--env", "1BAD=x", "--", "/bin/true"})).exitCode, 125);
  EXPECT_EQ(runProcess(run({"--resolve", "example.test=not-an-ip", "--", "/bin/true"})).exitCode, 125);
  EXPECT_EQ(runProcess(run({"--resolve", "bad_host!=127.0.0.1", "--", "/bin/true"})).exitCode, 125);
  EXPECT_EQ(runProcess(run({})).exitCode, 125);
}

TEST_F(RunCliTest, ResolveAcceptsIpv4AndIpv6Addresses) {
  auto r = runProcess(run({"--cwd", dir_, "--resolve", "api.example.test=127.0.0.1", "--resolve",
                           "v6.example.test=[::1]", "--", "/bin/true"}));
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

TEST_F(RunCliTest, TheAuditLogRecordsSpawnWithFingerprintAndExit) {
  const std::string& audit = audit_;
  auto r = runProcess(run({"--cwd", dir_, "--audit", audit, "--", "/bin/sh", "-c", "exit 3"}));
  ASSERT_EQ(r.exitCode, 3);
  std::ifstream in(audit);
  std::vector<nlohmann::json> events;
  for (std::string line; std::getline(in, line);) events.push_back(nlohmann::json::parse(line));
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.front()["event"], "spawn");
  EXPECT_EQ(events.front()["fingerprint"].get<std::string>().size(), 64u);
  EXPECT_TRUE(events.front()["enforcement"]["seccomp"].get<bool>());
  EXPECT_EQ(events.back()["event"], "exit");
  EXPECT_EQ(events.back()["exitCode"], 3);
}

TEST_F(RunCliTest, RepeatedDenialsFromManyProcessesAreWrittenOnceAndCounted) {
  // 60 processes each make the same denied call, socket(AF_UNIX, SOCK_DGRAM),
  // each with different garbage in the registers the call does not use.
  const std::string& audit = audit_;
  const auto started = std::chrono::steady_clock::now();
  auto r = runProcess(run({"--cwd", dir_, "--audit", audit, "--", "/bin/sh", "-c",
                           "for i in $(seq 60); do python3 -S -I -c 'import socket\ntry: "
                           "socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                           "except PermissionError: print(\"refused\")'; done"}));
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::size_t refused = 0;
  for (std::size_t at = r.out.find("refused"); at != std::string::npos; at = r.out.find("refused", at + 1)) ++refused;
  ASSERT_EQ(refused, 60u) << r.out;  // every process ran and was refused
  std::ifstream in(audit);
  long lines = 0, counted = 0;
  for (std::string line; std::getline(in, line);) {
    auto event = nlohmann::json::parse(line);
    if (event["event"] != "denial" || event["syscall"] != "socket" ||
        event["decoded"]["type"] != "SOCK_DGRAM|SOCK_CLOEXEC")
      continue;
    ++lines;
    counted += event.contains("count") ? event["count"].get<long>() : 1;
  }
  EXPECT_EQ(counted, 60);  // nothing lost
  // The first one, then the repeats as one count per flush (every second).
  EXPECT_LE(lines, 2 + seconds.count()) << "over " << seconds.count() << " s";
}

TEST_F(RunCliTest, AChildThatFloodsTheAuditCapCannotKeepItsExitOutOfTheLog) {
  // 50 distinct denied socket() calls (AF_PACKET, SOCK_RAW, protocols 1..50) against a cap of 5.
  auto r = runProcess(run({"--cwd", dir_, "--audit", audit_, "--audit-max-events", "5", "--", "/usr/bin/perl", "-e",
                           "for (1..50) { socket(my $s, 17, 3, $_) or $n++ } print \"refused $n\\n\"; exit 4"}));
  ASSERT_EQ(r.exitCode, 4) << r.err;
  EXPECT_EQ(r.out, "refused 50\n") << "the program ran and every call was refused";
  std::ifstream in(audit_);
  std::map<std::string, std::vector<nlohmann::json>> events;
  for (std::string line; std::getline(in, line);) {
    auto e = nlohmann::json::parse(line);
    events[e["event"].get<std::string>()].push_back(e);
  }
  EXPECT_EQ(events["denial"].size(), 5u) << "the cap holds for the child's denials";
  ASSERT_EQ(events["audit_dropped"].size(), 1u);
  EXPECT_EQ(events["audit_dropped"][0]["dropped"], 45);
  ASSERT_EQ(events["spawn"].size(), 1u);
  ASSERT_EQ(events["exit"].size(), 1u) << "the flood kept the exit event out of the audit log";
  EXPECT_EQ(events["exit"][0]["exitCode"], 4);
  EXPECT_EQ(events["exit"][0]["denials"], 50);
}

TEST_F(RunCliTest, TheAuditLogRecordsASetupFailure) {
  const std::string& audit = audit_;
  auto r = runProcess(run({"--cwd", dir_, "--audit", audit, "--", "no-such-program-stockade"}));
  ASSERT_EQ(r.exitCode, 127);
  std::ifstream in(audit);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  auto event = nlohmann::json::parse(line);
  EXPECT_EQ(event["event"], "spawn_failed");
  EXPECT_EQ(event["step"], "exec");
}

TEST_F(RunCliTest, TheChildSeesItsOwnPidNamespaceAndHostname) {
  auto r = runProcess(run({"--cwd", dir_, "--", "/bin/sh", "-c", "echo $$; hostname"}));
  EXPECT_EQ(r.out, "2\nstockade\n");
}


TEST_F(RunCliTest, AMissingEnforcementLayerIsReportedOnStderrAndInTheAuditLog) {
  // Socket files cannot be allowed one by one, so a non-empty
  // allowUnixSockets is weaker than it reads: the run goes ahead but says
  // so, loudly, in both places.
  std::ofstream(dir_ + "/unix.json") << R"({"network": {"allowUnixSockets": ["/run/stockade-test.sock"]}})";
  const std::string& audit = audit_;
  auto r = runProcess(run({"--policy", dir_ + "/unix.json", "--cwd", dir_, "--audit", audit, "--", "/bin/true"}));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("weaker enforcement: network.allowUnixSockets"), std::string::npos) << r.err;
  std::ifstream in(audit);
  bool degraded = false;
  for (std::string line; std::getline(in, line);) {
    auto event = nlohmann::json::parse(line);
    if (event["event"] == "degraded" &&
        event["what"].get<std::string>().find("network.allowUnixSockets") != std::string::npos)
      degraded = true;
  }
  EXPECT_TRUE(degraded);
}

TEST_F(RunCliTest, AFullyEnforcedRunPrintsNoWarning) {
  const std::string& audit = audit_;
  auto r = runProcess(run({"--cwd", dir_, "--audit", audit, "--", "/bin/true"}));
  ASSERT_EQ(r.exitCode, 0);
  std::ifstream in(audit);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  auto spawn = nlohmann::json::parse(line);
  if (!spawn["enforcement"]["degradations"].empty())
    GTEST_SKIP() << "this kernel lacks a layer: " << spawn["enforcement"]["degradations"].dump();
  EXPECT_EQ(r.err.find("weaker enforcement"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stockade::testing
