// Seed 001, sentence by sentence, against the real manager and real children.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "platform/linux/cgroup.h"
#include "stockade/stockade.h"
#include "tests/support/manager_fixture.h"
#include "tests/support/private_mounts.h"
#include "tests/support/read_file.h"
#include "tests/support/temp_dir.h"

namespace stockade {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

class ManagerTest : public testing::ManagerFixture {
 protected:
  // A policy over this test's own directories: writes to `work`, secrets denied.
  SandboxPolicy policy(const std::string& extra = "") {
    return SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[")" + secrets_ + R"("],"allowWrite":[")" + work_ +
                                   R"("]}, "env":{"allow":["PATH"]})" + extra + "}");
  }
  static SandboxHandle create(const SandboxPolicy& p) { return SandboxManager::instance().createSandbox(p); }

  RunOutput runSh(SandboxHandle& h, const std::string& script, std::optional<SandboxPolicy> perCall = std::nullopt,
                  std::map<std::string, std::string> env = {}) {
    RunOptions o{.argv = {"/bin/sh", "-c", script}, .correlationId = "test", .cwd = work_};
    o.env = std::move(env);
    o.policy = std::move(perCall);
    return h.run(std::move(o)).collect();
  }

  template <typename F>
  static SandboxError expectError(F&& f) {
    try {
      f();
    } catch (const SandboxError& e) {
      return e;
    }
    ADD_FAILURE() << "expected a SandboxError";
    return SandboxError(ErrorCode::kSpawnFailed, "none");
  }

  TempDir t_;
  std::string work_ = t_.dir("work");
  std::string secrets_ = t_.dir("secrets");
};

TEST_F(ManagerTest, FirstCreateSandboxAdmitsTheDerivedRules) {
  SandboxHandle h = create(policy());
  auto expected = std::get<DerivedRules>(derive(policy(), currentContext()));
  EXPECT_EQ(h.effectivePolicy().fingerprint(), expected.fingerprint());
  EXPECT_TRUE(h.isEpochLive(h.epoch()));
  EXPECT_FALSE(h.isAdopted());
  EXPECT_TRUE(audited("admit"));
}

TEST_F(ManagerTest, WideningCreateSandboxThrowsConflictNamingBothPolicies) {
  SandboxHandle h = create(policy());
  SandboxPolicy wider = SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[")" + secrets_ + R"("],"allowWrite":[")" +
                                                work_ + R"(","/srv/data"]},"env":{"allow":["PATH"]}})");
  SandboxError e = expectError([&] { create(wider); });
  EXPECT_EQ(e.code(), ErrorCode::kPolicyConflict);
  EXPECT_EQ(e.codeName(), "E_SANDBOX_POLICY_CONFLICT");
  std::string msg = e.what();
  EXPECT_NE(msg.find(h.effectivePolicy().fingerprint()), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::get<DerivedRules>(derive(wider, currentContext())).fingerprint()), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"/srv/data\""), std::string::npos) << msg;
}

TEST_F(ManagerTest, NarrowingCreateSandboxNarrowsTheLivePolicyForEveryHandle) {
  SandboxHandle first = create(policy());
  std::string sub = t_.dir("work/sub");
  SandboxHandle second = create(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[")" + secrets_ +
                                                        R"("],"allowWrite":[")" + sub + R"("]},"env":{"allow":["PATH"]}})"));
  EXPECT_EQ(first.effectivePolicy(), second.effectivePolicy()) << "handles are views of one process-global sandbox";
  EXPECT_EQ(first.effectivePolicy().filesystem().allowWrite, std::vector<std::string>{sub});
  // And the first handle's children now get the narrowed rules.
  auto out = runSh(first, "echo x > " + work_ + "/top && echo written");
  EXPECT_EQ(out.out, "") << "writing outside the narrowed path must fail";
  EXPECT_FALSE(std::filesystem::exists(work_ + "/top"));
}

TEST_F(ManagerTest, AdoptWithoutAManagerIsNotInitialized) {
  SandboxError e = expectError([] { SandboxManager::instance().adopt(); });
  EXPECT_EQ(e.codeName(), "E_SANDBOX_NOT_INITIALIZED");
}

TEST_F(ManagerTest, DisposeOnAnAdoptedHandleIsAReportedNoOp) {
  SandboxHandle owner = create(policy());
  SandboxHandle adopted = SandboxManager::instance().adopt();
  EXPECT_TRUE(adopted.isAdopted());
  EXPECT_FALSE(adopted.dispose());
  EXPECT_TRUE(audited("dispose_ignored"));
  EXPECT_TRUE(SandboxManager::instance().initialized());
  EXPECT_TRUE(owner.isEpochLive(owner.epoch()));
  EXPECT_TRUE(adopted.isEpochLive(adopted.epoch()));
}

TEST_F(ManagerTest, AdoptedEffectivePolicyIsReDerivedOnEveryCallWhileOwnedIsCached) {
  SandboxHandle owner = create(policy());
  SandboxHandle adopted = SandboxManager::instance().adopt();
  // After admission the workspace becomes a repository whose config sends
  // hooks elsewhere: a re-derivation protects that directory.
  t_.file("work/.git/config", "[core]\n\thooksPath = githooks\n");
  auto has = [&](const DerivedRules& r) {
    const auto& m = r.filesystem().mandatoryDenyWrite;
    return std::find(m.begin(), m.end(), work_ + "/githooks") != m.end();
  };
  EXPECT_TRUE(has(adopted.effectivePolicy()));
  EXPECT_FALSE(has(owner.effectivePolicy()));
}

TEST_F(ManagerTest, NarrowRefusesAWideningNamingTheAxis) {
  SandboxHandle h = create(policy());
  SandboxError e = expectError([&] {
    h.narrow(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[")" + secrets_ + R"("],"allowRead":[")" + secrets_ +
                                     R"(/pub"],"allowWrite":[")" + work_ + R"("]},"env":{"allow":["PATH"]}})"));
  });
  EXPECT_EQ(e.code(), ErrorCode::kPolicyConflict);
  EXPECT_NE(std::string(e.what()).find("filesystem.allowRead"), std::string::npos)
      << "a read carve-out inside a denied tree widens: " << e.what();
}

TEST_F(ManagerTest, NarrowAcceptsAnAddedWriteDenyAndItAppliesToTheNextChild) {
  SandboxHandle h = create(policy());
  EXPECT_EQ(runSh(h, "echo x > " + work_ + "/.env && echo ok").out, "ok\n");
  h.narrow(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[")" + secrets_ + R"("],"allowWrite":[")" + work_ +
                                   R"("],"denyWrite":[")" + work_ + R"(/.env"]},"env":{"allow":["PATH"]}})"));
  EXPECT_TRUE(audited("narrow"));
  auto out = runSh(h, "echo y > " + work_ + "/.env && echo ok");
  EXPECT_NE(out.out, "ok\n") << "the added write deny must hold";
  EXPECT_EQ(runSh(h, "echo y > " + work_ + "/other && echo ok").out, "ok\n");
}

TEST_F(ManagerTest, NarrowingPidsWithoutAUsablePidsCgroupIsUnsupportedNamingIt) {
  if (std::holds_alternative<platform::CgroupHierarchy>(platform::findCgroupController(platform::CgroupController::kPids)))
    GTEST_SKIP() << "a pids cgroup is usable here; the unprivileged re-run covers this";
  SandboxHandle h = create(policy());
  SandboxError e = expectError([&] { h.narrow(policy(R"(,"limits":{"pids":16})")); });
  EXPECT_EQ(e.codeName(), "E_SANDBOX_NARROWING_UNSUPPORTED");
  EXPECT_NE(std::string(e.what()).find("limits.pids"), std::string::npos);
  // Admitting such a policy succeeds, but its spawns are refused rather than run unlimited.
  SandboxManager::instance().resetForTesting();
  SandboxHandle limited = create(policy(R"(,"limits":{"pids":16})"));
  SandboxError refused = expectError([&] { runSh(limited, "true"); });
  EXPECT_EQ(refused.codeName(), "E_SANDBOX_SPAWN_FAILED");
  EXPECT_NE(std::string(refused.what()).find("limits.pids: not enforced"), std::string::npos) << refused.what();
}

TEST_F(ManagerTest, NarrowedPidsLimitHoldsForTheNextChildAndTheSpawnIsAuditedWithItsCgroup) {
  auto controller = platform::findCgroupController(platform::CgroupController::kPids);
  if (auto* why = std::get_if<std::string>(&controller)) {
    if (::geteuid() == 0) ADD_FAILURE() << "root, yet: " << *why;
    GTEST_SKIP() << "no usable pids cgroup for this user: " << *why;
  }
  SandboxHandle h = create(policy());
  EXPECT_EQ(runSh(h, "sleep 5 & sleep 5 & sleep 5 & sleep 5 & echo forked").out, "forked\n");
  h.narrow(policy(R"(,"limits":{"pids":4})"));
  // The shell and three children fit; a fourth child does not.
  EXPECT_EQ(runSh(h, "sleep 5 & sleep 5 & sleep 5 & echo forked").out, "forked\n");
  auto over = runSh(h, "sleep 5 & sleep 5 & sleep 5 & sleep 5 & echo forked");
  EXPECT_NE(over.out, "forked\n");
  EXPECT_TRUE(over.completion.failed) << over.err;
  const std::string mechanism = platform::limitMechanismName(std::get<platform::CgroupHierarchy>(controller).mechanism);
  EXPECT_TRUE(auditedWhere([&](const nlohmann::json& j) {
    if (j["event"] != "spawn" || !j.contains("enforcement")) return false;
    const auto& pids = j["enforcement"]["pids"];
    return pids.is_object() && pids["mechanism"] == mechanism &&
           !std::filesystem::exists(pids["cgroup"].get<std::string>());
  }));
}

TEST_F(ManagerTest, EpochsDieWithDisposeAndNewWorkIsRefused) {
  SandboxHandle h = create(policy());
  Epoch e = h.epoch();
  EXPECT_TRUE(h.dispose());
  EXPECT_FALSE(h.isEpochLive(e));
  EXPECT_FALSE(SandboxManager::instance().initialized());
  EXPECT_EQ(expectError([&] { runSh(h, "true"); }).codeName(), "E_SANDBOX_NOT_INITIALIZED");
  EXPECT_EQ(expectError([&] { h.effectivePolicy(); }).codeName(), "E_SANDBOX_NOT_INITIALIZED");
  EXPECT_EQ(expectError([&] { h.narrow(policy()); }).codeName(), "E_SANDBOX_NOT_INITIALIZED");
  // A new sandbox gets a new epoch; the old one stays dead.
  SandboxHandle again = create(policy());
  EXPECT_TRUE(again.isEpochLive(again.epoch()));
  EXPECT_FALSE(again.isEpochLive(e));
}

// A sandbox-runtime key the library accepts is never silent: the admit
// event names it.
TEST_F(ManagerTest, TheAdmitEventCarriesThePolicysSandboxRuntimeNotes) {
  create(policy(R"(,"allowAppleEvents":false,"mandatoryDenySearchDepth":3)"));
  EXPECT_TRUE(auditedWhere([](const nlohmann::json& j) {
    return j["event"] == "admit" && j["notes"] == nlohmann::json::parse(R"([
      {"kind": "not-applicable", "path": "allowAppleEvents", "why": "macOS only"},
      {"kind": "stronger", "path": "mandatoryDenySearchDepth", "why": "mandatory-deny names are protected at every depth"}])");
  }));
}

TEST_F(ManagerTest, ASeccompDenialIsAuditedWithItsRunAndCountedAtExit) {
  SandboxHandle h = create(policy());
  // unshare(CLONE_NEWUSER) is in the seccomp table; the shell sees EPERM.
  auto out = runSh(h, "unshare -U true 2>/dev/null; echo rc=$?");
  EXPECT_EQ(out.out, "rc=1\n");
  EXPECT_TRUE(auditedWhere([](const nlohmann::json& j) {
    return j["event"] == "denial" && j["syscall"] == "unshare" && j["correlationId"] == "test" && j.contains("runId");
  }));
  EXPECT_TRUE(auditedWhere([](const nlohmann::json& j) { return j["event"] == "exit" && j["denials"].get<long>() >= 1; }));
}

TEST_F(ManagerTest, RunReturnsOnSpawnWithLiveStreamsAndNonZeroExitIsData) {
  SandboxHandle h = create(policy());
  auto ok = runSh(h, "echo out; echo err >&2");
  EXPECT_EQ(ok.out, "out\n");
  EXPECT_EQ(ok.err, "err\n");
  EXPECT_EQ(ok.completion.exitCode, 0);
  EXPECT_FALSE(ok.completion.failed);
  auto bad = runSh(h, "exit 3");
  EXPECT_EQ(bad.completion.exitCode, 3);
  EXPECT_TRUE(bad.completion.failed);
  EXPECT_FALSE(bad.completion.signalCode);
}

TEST_F(ManagerTest, WithAWorkspaceChildrenSeeItAtWorkspaceUnderItsRulesAndTheServiceStartsThere) {
  t_.file("work/f", "F\n");
  t_.file("work/secret/key", "WS-SECRET\n");
  t_.file("work/locked/x", "LOCKED\n");
  SandboxHandle h = SandboxManager::instance().createSandbox(
      SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":["./secret"],"allowRead":[],"allowWrite":["."],)"
                              R"("denyWrite":["./locked"]},"env":{"allow":["PATH"]}})"),
      {.workspace = work_});
  // Relative policy paths meant the workspace.
  EXPECT_NE(h.effectivePolicy().filesystem().denyWrite.end(),
            std::find(h.effectivePolicy().filesystem().denyWrite.begin(),
                      h.effectivePolicy().filesystem().denyWrite.end(), work_ + "/locked"));
  RunOptions o{.argv = {"/bin/sh", "-c", "pwd; cat f; cat secret/key; echo y > locked/x; echo z > new && echo end"},
               .correlationId = "test",
               .cwd = "/workspace"};
  auto r = h.run(std::move(o)).collect();
  EXPECT_EQ(r.out, "/workspace\nF\nend\n") << r.err;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  EXPECT_EQ(testing::readWholeFile(work_ + "/locked/x"), "LOCKED\n");
  EXPECT_EQ(testing::readWholeFile(work_ + "/new"), "z\n");
  // The process service: /workspace by default, a relative cwd beneath it.
  auto ran = h.processes().run(ProcessCommand::shell("pwd"));
  ASSERT_TRUE(std::holds_alternative<RunResult>(ran));
  EXPECT_EQ(std::get<RunResult>(ran).stdout, "/workspace\n");
  ProcessRunOptions sub;
  sub.start.cwd = "locked";
  ran = h.processes().run(ProcessCommand::shell("pwd; cat x"), sub);
  ASSERT_TRUE(std::holds_alternative<RunResult>(ran));
  EXPECT_EQ(std::get<RunResult>(ran).stdout, "/workspace/locked\nLOCKED\n");
  // A later createSandbox() cannot move the workspace.
  TempDir other;
  SandboxError e = expectError([&] {
    SandboxManager::instance().createSandbox(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":["./secret"],)"
                                                                     R"("allowRead":[],"allowWrite":["."],)"
                                                                     R"("denyWrite":["./locked"]},"env":{"allow":["PATH"]}})"),
                                             {.workspace = other.path()});
  });
  EXPECT_EQ(e.code(), ErrorCode::kPolicyConflict);
  EXPECT_NE(std::string(e.what()).find("workspace"), std::string::npos) << e.what();
}

// A writable tree inside a denyWrite tree is dead (the deny wins): the
// library refuses the policy as the CLI does, naming both; the neighbour --
// the deny inside the writable tree -- leaves the rest writable.
TEST_F(ManagerTest, AWritableTreeInsideADenyWriteTreeIsAnInvalidPolicy) {
  t_.dir("work/gen/sub");
  SandboxError e = expectError([&] {
    create(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[],"allowRead":[],"allowWrite":[")" + work_ + R"(",")" +
                                   work_ + R"(/gen/sub"],"denyWrite":[")" + work_ + R"(/gen"]},"env":{"allow":["PATH"]}})"));
  });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidPolicy) << e.what();
  EXPECT_NE(std::string(e.what()).find("filesystem.allowWrite[1]"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("lies inside the write-denied \"" + work_ + "/gen\""), std::string::npos)
      << e.what();
  SandboxHandle h = create(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[],"allowRead":[],"allowWrite":[")" +
                                                   work_ + R"("],"denyWrite":[")" + work_ +
                                                   R"(/gen"]},"env":{"allow":["PATH"]}})"));
  auto r = runSh(h, "echo a > gen/sub/f; echo b > top && echo wrote");
  EXPECT_EQ(r.out, "wrote\n") << r.err;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(work_ + "/gen/sub/f"));
  EXPECT_EQ(testing::readWholeFile(work_ + "/top"), "b\n");
}

TEST_F(ManagerTest, BothStreamsDrainConcurrentlyWithoutDeadlock) {
  SandboxHandle h = create(policy());
  // 1 MiB on each stream: far beyond a pipe buffer.
  auto out = runSh(h, "head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2");
  EXPECT_EQ(out.out.size(), 1048576u);
  EXPECT_EQ(out.err.size(), 1048576u);
}

TEST_F(ManagerTest, DisposeKillsInFlightChildrenAndSettlesCompleted) {
  SandboxHandle h = create(policy());
  stockade::Run r = h.run({.argv = {"/bin/sleep", "600"}, .correlationId = "long", .cwd = work_});
  EXPECT_EQ(r.completed.wait_for(200ms), std::future_status::timeout);
  h.dispose();
  ASSERT_EQ(r.completed.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(r.completed.get().signalCode.value_or(""), "SIGKILL");
  EXPECT_EQ(r.completed.get().exitCode, 128 + 9);
}

TEST_F(ManagerTest, StoppingTheTokenKillsTheChild) {
  SandboxHandle h = create(policy());
  std::stop_source stop;
  RunOptions o{.argv = {"/bin/sleep", "600"}, .correlationId = "c", .cwd = work_};
  o.stop = stop.get_token();
  stockade::Run r = h.run(std::move(o));
  stop.request_stop();
  ASSERT_EQ(r.completed.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(r.completed.get().signalCode.value_or(""), "SIGKILL");
  EXPECT_TRUE(h.isEpochLive(h.epoch())) << "stopping one run does not dispose the sandbox";
}

TEST_F(ManagerTest, DriftBySymlinkSwapIsCaughtBeforeSpawn) {
  std::string dir = t_.dir("swap");
  SandboxHandle h = create(SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":[")" + dir + R"("]}})"));
  EXPECT_EQ(runSh(h, "true").completion.exitCode, 0);
  std::filesystem::remove(dir);
  std::filesystem::create_directory_symlink("/etc", dir);
  SandboxError e = expectError([&] { runSh(h, "echo pwned > " + dir + "/owned"); });
  EXPECT_EQ(e.codeName(), "E_SANDBOX_POLICY_DRIFT");
  EXPECT_NE(std::string(e.what()).find("\"/etc\""), std::string::npos) << e.what();
  EXPECT_TRUE(audited("drift"));
  EXPECT_FALSE(std::filesystem::exists("/etc/owned"));
}

TEST_F(ManagerTest, DriftByAMovedReadDeniedFileIsCaught) {
  std::string key = t_.file("secrets-file/id_rsa", "PRIVATE");
  SandboxHandle h = create(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[")" + key + R"("],"allowWrite":[")" +
                                                   work_ + R"("]}})"));
  EXPECT_EQ(runSh(h, "cat " + key + " || true").out, "") << "denied while in place";
  std::filesystem::rename(key, work_ + "/id_rsa");
  SandboxError e = expectError([&] { runSh(h, "cat " + work_ + "/id_rsa"); });
  EXPECT_EQ(e.codeName(), "E_SANDBOX_POLICY_DRIFT");
  EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
}

TEST_F(ManagerTest, PerCallFilesystemReplacesTheSessionsRatherThanUnions) {
  std::string a = t_.dir("a"), b = t_.dir("b");
  SandboxHandle h = create(SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":[")" + a + R"(",")" + b + R"("]}})"));
  auto perCall = SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":[")" + a + R"("]}})");
  auto out = runSh(h, "echo 1 > " + a + "/f && echo a-ok; echo 2 > " + b + "/f && echo b-ok", perCall);
  EXPECT_EQ(out.out, "a-ok\n") << "b is a baseline write path the per-call policy did not repeat; stderr: " << out.err;
  EXPECT_FALSE(std::filesystem::exists(b + "/f"));
}

TEST_F(ManagerTest, DenyReadRootDeniesEveryReadWhileACarveOutIsReadable) {
  t_.file("secrets/id_ed25519", "SECRET-KEY\n");
  t_.file("work/carved.txt", "CARVED\n");
  SandboxHandle h = create(SandboxPolicy::fromJson(
      R"({"filesystem":{"denyRead":["/"],"allowRead":["/usr","/lib","/lib64","/bin","/etc",")" + work_ +
      R"("],"allowWrite":[")" + work_ + R"("],"denyWrite":[]},"env":{"allow":["PATH"]}})"));
  auto out = runSh(h, "cat " + secrets_ + "/id_ed25519; echo key=$?; cat " + work_ + "/carved.txt");
  EXPECT_EQ(out.out.find("SECRET"), std::string::npos) << out.out;
  EXPECT_EQ(out.out, "key=1\nCARVED\n") << out.err;
  // The spare built after that run enforces the same: a second run is no weaker.
  auto again = runSh(h, "cat " + secrets_ + "/id_ed25519; echo key=$?; cat " + work_ + "/carved.txt");
  EXPECT_EQ(again.out, "key=1\nCARVED\n") << again.err;
}

TEST_F(ManagerTest, UnderADeniedRootAProgramNotCarvedOutIsASpawnFailureSayingWhatToAllow) {
  SandboxHandle h = create(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":["/"],"allowRead":[")" + work_ +
                                                   R"("],"allowWrite":[")" + work_ +
                                                   R"("],"denyWrite":[]},"env":{"allow":["PATH"]}})"));
  SandboxError e = expectError([&] { runSh(h, "echo ran"); });
  EXPECT_EQ(e.codeName(), "E_SANDBOX_SPAWN_FAILED");
  EXPECT_NE(std::string(e.what()).find("lies in the read-denied \"/\" (filesystem.denyRead)"), std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find("\"allowRead\": [\"/usr\""), std::string::npos) << e.what();
}

TEST_F(ManagerTest, ARuleThePlanCannotEnforceIsASpawnFailureNamingTheEntry) {
  SandboxHandle h = create(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":["/dev"],"allowWrite":[")" + work_ +
                                                   R"("],"denyWrite":[]},"env":{"allow":["PATH"]}})"));
  SandboxError e = expectError([&] { runSh(h, "echo ran"); });
  EXPECT_EQ(e.codeName(), "E_SANDBOX_SPAWN_FAILED");
  EXPECT_NE(std::string(e.what()).find("setup step \"coverage\""), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("filesystem.denyRead \"/dev\""), std::string::npos) << e.what();
}

TEST_F(ManagerTest, PerCallFilesystemWideningIsAConflict) {
  SandboxHandle h = create(policy());
  auto wider = SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[")" + secrets_ + R"("],"allowWrite":["/srv/data"]},
                                           "env":{"allow":["PATH"]}})");
  SandboxError e = expectError([&] { runSh(h, "true", wider); });
  EXPECT_EQ(e.codeName(), "E_SANDBOX_POLICY_CONFLICT");
  EXPECT_NE(std::string(e.what()).find("filesystem.allowWrite: \"/srv/data\""), std::string::npos) << e.what();
}

// A per-call policy is complete: a field it leaves out is the bundled
// default's, never the session's (the filesystem part replaces the session's).
TEST_F(ManagerTest, APerCallPolicyLeavesOutFieldsAtTheBundledDefaultNotTheSessions) {
  SandboxHandle h = create(policy());
  const std::string write = R"("allowWrite":[")" + work_ + R"("])";
  auto repeated = SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[")" + secrets_ + R"("],)" + write +
                                          R"(},"env":{"allow":["PATH"]}})");
  EXPECT_EQ(runSh(h, "echo ok", repeated).out, "ok\n");
  // Without denyRead the default's list applies, which leaves the session's secrets readable.
  auto noDenyRead = SandboxPolicy::fromJson(R"({"filesystem":{)" + write + R"(},"env":{"allow":["PATH"]}})");
  SandboxError e = expectError([&] { runSh(h, "true", noDenyRead); });
  EXPECT_EQ(e.codeName(), "E_SANDBOX_POLICY_CONFLICT");
  EXPECT_NE(std::string(e.what()).find("filesystem.denyRead: \"" + secrets_ + "\""), std::string::npos) << e.what();
  // Without env the default's PATH HOME LANG TERM apply, wider than the session's PATH.
  auto noEnv = SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[")" + secrets_ + R"("],)" + write + "}}");
  SandboxError env = expectError([&] { runSh(h, "true", noEnv); });
  EXPECT_EQ(env.codeName(), "E_SANDBOX_POLICY_CONFLICT");
  EXPECT_NE(std::string(env.what()).find("env.allow"), std::string::npos) << env.what();
}

TEST_F(ManagerTest, PerCallNetworkMustEqualTheSessionsOrStrictlyNarrowIt) {
  SandboxHandle h = create(SandboxPolicy::fromJson(
      R"({"filesystem":{"allowWrite":[")" + work_ + R"("]},"network":{"allowedDomains":["a.example","*.b.example"]}})"));
  auto with = [&](const std::string& net) {
    return SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":[")" + work_ + R"("]},"network":)" + net + "}");
  };
  // Equal as a set, in another order: fine.
  EXPECT_EQ(runSh(h, "true", with(R"({"allowedDomains":["*.b.example","A.example"]})")).completion.exitCode, 0);
  // A strict narrowing: honoured for this child.
  EXPECT_EQ(runSh(h, "true", with(R"({"allowedDomains":["api.b.example"]})")).completion.exitCode, 0);
  // A new domain: refused.
  SandboxError e = expectError([&] { runSh(h, "true", with(R"({"allowedDomains":["a.example","c.example"]})")); });
  EXPECT_EQ(e.codeName(), "E_SANDBOX_NETWORK_GRANT_UNSUPPORTED");
  EXPECT_NE(std::string(e.what()).find("c.example"), std::string::npos);
}

TEST_F(ManagerTest, EnvOverlayIsAdditiveButCannotSetProxyVariablesOrReservedNames) {
  ::setenv("STOCKADE_TEST_HOST_ONLY", "leak", 1);
  SandboxHandle h = create(policy());
  auto out = runSh(h, "echo \"$FOO|$STOCKADE_TEST_HOST_ONLY|$TMPDIR\"", std::nullopt, {{"FOO", "bar"}});
  EXPECT_EQ(out.out, "bar||/tmp\n") << "host variables outside env.allow never reach the child";
  EXPECT_THROW(runSh(h, "true", std::nullopt, {{"_tX", "1"}}), std::invalid_argument);
  EXPECT_THROW(runSh(h, "true", std::nullopt, {{"1BAD", "1"}}), std::invalid_argument);
  // Without network stockade sets no proxy variable, so the overlay may.
  EXPECT_EQ(runSh(h, "echo \"$https_proxy\"", std::nullopt, {{"https_proxy", "http://127.0.0.1:9"}}).out,
            "http://127.0.0.1:9\n");
}

TEST_F(ManagerTest, WithNetworkTheProxyVariablesAreStockadesAndTheOverlayCannotSetThem) {
  SandboxHandle h = create(policy(R"(,"network":{"allowedDomains":["a.example"],"deniedDomains":[]})"));
  for (const char* name : {"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "NO_PROXY"}) {
    try {
      runSh(h, "true", std::nullopt, {{name, "http://evil:1"}});
      ADD_FAILURE() << name << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("\"") + name + "\" is a proxy variable"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(runSh(h, "echo \"$HTTPS_PROXY\"").out, "http://127.0.0.1:3128\n");
}

TEST_F(ManagerTest, CallerBugsThrowInvalidArgument) {
  SandboxHandle h = create(policy());
  EXPECT_THROW(h.run({.argv = {}, .correlationId = "c", .cwd = work_}), std::invalid_argument);
  EXPECT_THROW(h.run({.argv = {"/bin/true"}, .correlationId = "", .cwd = work_}), std::invalid_argument);
  EXPECT_THROW(h.run({.argv = {"/bin/true"}, .correlationId = "c", .cwd = "relative"}), std::invalid_argument);
  RunOptions badResolve{.argv = {"/bin/true"}, .correlationId = "c", .cwd = work_};
  badResolve.resolve = {{"origin.test", "not-an-address"}};
  EXPECT_THROW(h.run(std::move(badResolve)), std::invalid_argument);
}

TEST_F(ManagerTest, CreateSandboxDuringADisposeWaitsForItAndGetsAWorkingSandbox) {
  // A slow sink keeps dispose() waiting for the child's exit event.
  SandboxManager::instance().setAuditSink([](const std::string& line) {
    if (line.find("\"event\":\"exit\"") != std::string::npos) std::this_thread::sleep_for(300ms);
  });
  SandboxHandle h = create(policy());
  stockade::Run r = h.run({.argv = {"/bin/sleep", "100"}, .correlationId = "c", .cwd = work_});
  std::thread disposer([&] { h.dispose(); });
  while (SandboxManager::instance().initialized()) std::this_thread::yield();
  SandboxHandle next = create(policy());  // waits for the dispose in progress
  EXPECT_EQ(r.completed.wait_for(0ms), std::future_status::ready) << "the old sandbox was fully down first";
  disposer.join();
  EXPECT_TRUE(next.isEpochLive(next.epoch()));
  EXPECT_EQ(runSh(next, "echo alive").out, "alive\n");
  EXPECT_EQ(next.effectivePolicy().fingerprint(), std::get<DerivedRules>(derive(policy(), currentContext())).fingerprint());
}

TEST_F(ManagerTest, ASecondConcurrentDisposeReturnsOnlyWhenEverythingIsDown) {
  SandboxManager::instance().setAuditSink([](const std::string& line) {
    if (line.find("\"event\":\"exit\"") != std::string::npos) std::this_thread::sleep_for(300ms);
  });
  SandboxHandle h = create(policy());
  stockade::Run r = h.run({.argv = {"/bin/sleep", "100"}, .correlationId = "c", .cwd = work_});
  std::thread first([&] { h.dispose(); });
  while (SandboxManager::instance().initialized()) std::this_thread::yield();
  EXPECT_TRUE(h.dispose());
  EXPECT_EQ(r.completed.wait_for(0ms), std::future_status::ready);
  first.join();
}

TEST_F(ManagerTest, AThrowingAuditSinkNeitherLeaksChildrenNorBlocksDispose) {
  SandboxManager::instance().setAuditSink([](const std::string&) { throw std::runtime_error("sink full"); });
  SandboxHandle h = create(policy());
  stockade::Run r = h.run({.argv = {"/bin/sleep", "100"}, .correlationId = "c", .cwd = work_});
  auto done = std::async(std::launch::async, [&] { h.dispose(); });
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
  ASSERT_EQ(r.completed.wait_for(0ms), std::future_status::ready);
  EXPECT_EQ(r.completed.get().signalCode.value_or(""), "SIGKILL");
}

TEST_F(ManagerTest, CallingTheManagerFromAnAuditSinkIsRefusedNotADeadlock) {
  static std::optional<SandboxHandle> handle;
  static std::atomic<bool> refused{false};
  handle = create(policy());
  SandboxManager::instance().setAuditSink([](const std::string& line) {
    if (line.find("\"event\":\"exit\"") == std::string::npos) return;
    try {
      handle->dispose();
    } catch (const std::logic_error&) {
      refused = true;
    }
  });
  stockade::Run r = handle->run({.argv = {"/bin/sh", "-c", "exit 3"}, .correlationId = "c", .cwd = work_});
  ASSERT_EQ(r.completed.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(r.completed.get().exitCode, 3);
  EXPECT_TRUE(refused);
  EXPECT_TRUE(handle->isEpochLive(handle->epoch()));
  handle.reset();
}

TEST_F(ManagerTest, ConcurrentRunNarrowAndDisposeAreSafe) {
  SandboxHandle h = create(policy());
  std::atomic<int> completed{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        try {
          auto out = runSh(h, "echo hi");
          if (out.completion.exitCode == 0 || out.completion.signalCode) ++completed;
        } catch (const SandboxError& e) {
          EXPECT_EQ(e.codeName(), "E_SANDBOX_NOT_INITIALIZED") << e.what();
          ++refused;
        }
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 5; ++i) {
      try {
        h.narrow(policy());
      } catch (const SandboxError& e) {
        EXPECT_EQ(e.codeName(), "E_SANDBOX_NOT_INITIALIZED") << e.what();
      }
      std::this_thread::sleep_for(5ms);
    }
    h.dispose();
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(completed + refused, 40);
  EXPECT_FALSE(h.isEpochLive(h.epoch()));
}

// --- the spare: a sandbox built ahead for the next run() (src/spare.cc) ---

// Pids of this process's children named stockade-init: sandboxes that exist,
// running a program or waiting for one.
std::vector<int> sandboxInits() {
  std::vector<int> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    auto close = line.rfind(')');
    auto open = line.find('(');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == ::getpid() && line.substr(open + 1, close - open - 1) == "stockade-init")
      out.push_back(std::stoi(line.substr(0, open)));
  }
  return out;
}

// Sandboxes that have finished building and wait for their program: their
// init blocks in read(2) on the command socket, the only read it makes.
int sparesWaiting() {
  int n = 0;
  for (int pid : sandboxInits()) {
    std::ifstream syscall("/proc/" + std::to_string(pid) + "/syscall");
    std::string number;
    if (syscall >> number && number == "0") ++n;
  }
  return n;
}

// Exactly one sandbox exists, and it is a built spare.
bool oneSpareWaiting() { return sandboxInits().size() == 1 && sparesWaiting() == 1; }

template <typename Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 200; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

TEST_F(ManagerTest, ASpareIsBuiltAfterARunAndKilledByDispose) {
  SandboxHandle h = create(policy());
  EXPECT_EQ(runSh(h, "echo ok").out, "ok\n");
  ASSERT_TRUE(eventually(oneSpareWaiting)) << "no spare sandbox was built after run()";
  h.dispose();
  EXPECT_TRUE(eventually([] { return sandboxInits().empty(); })) << "dispose() left a spare sandbox running";
}

TEST_F(ManagerTest, ASpareIsNotUsedOnceTheWorkspaceItBoundWasReplaced) {
  SandboxHandle h = create(policy());
  EXPECT_EQ(runSh(h, "echo ok").out, "ok\n");
  ASSERT_TRUE(eventually(oneSpareWaiting));
  // Same path, new directory (a CI runner re-cloning its workspace): the
  // spare's bind holds the deleted one.
  std::filesystem::remove_all(work_);
  std::filesystem::create_directory(work_);
  EXPECT_EQ(runSh(h, "echo hi > " + work_ + "/f && echo ok").out, "ok\n");
  std::ifstream written(work_ + "/f");
  std::string text;
  std::getline(written, text);
  EXPECT_EQ(text, "hi") << "the child wrote into the replaced directory, not the one at the path now";
}

TEST_F(ManagerTest, ASpareDoesNotLeaveAReplacedGitHooksDirectoryWritable) {
  t_.file("work/.git/HEAD", "ref: refs/heads/main\n");
  t_.dir("work/.git/hooks");
  SandboxHandle h = create(policy());
  EXPECT_NE(runSh(h, "echo x > " + work_ + "/.git/hooks/pre-commit && echo written").out, "written\n");
  ASSERT_TRUE(eventually(oneSpareWaiting));
  // The rules are unchanged (.git/hooks exists either way), but the spare's
  // read-only bind covers the old directory.
  std::filesystem::rename(work_ + "/.git/hooks", work_ + "/.git/old-hooks");
  std::filesystem::create_directory(work_ + "/.git/hooks");
  auto out = runSh(h, "echo x > " + work_ + "/.git/hooks/pre-commit && echo written");
  EXPECT_NE(out.out, "written\n") << "a new .git/hooks was writable through a sandbox built before it existed";
  EXPECT_FALSE(std::filesystem::exists(work_ + "/.git/hooks/pre-commit"));
  EXPECT_EQ(runSh(h, "echo x > " + work_ + "/notes && echo written").out, "written\n");
}

TEST_F(ManagerTest, ARecreatedReadDeniedFileIsNotServedByAnOlderSpare) {
  // Deleting a file on the host takes the mounts on it away in every
  // namespace, the spare's mask included; its inode number may then be reused.
  std::string secret = t_.file("work/.env", "OLD\n");
  SandboxHandle h = create(SandboxPolicy::fromJson(R"({"filesystem":{"denyRead":[")" + secret + R"("],"allowWrite":[")" +
                                                   work_ + R"("]},"env":{"allow":["PATH"]}})"));
  EXPECT_EQ(runSh(h, "cat " + secret + "; echo rc=$?").out, "rc=0\n");  // masked: an empty file
  ASSERT_TRUE(eventually(oneSpareWaiting));
  std::filesystem::remove(secret);
  t_.file("work/.env", "NEWSECRET\n");
  // Either the drift check refuses (a denied object was replaced) or the new
  // file is masked too; never is it readable.
  try {
    auto out = runSh(h, "cat " + secret + " 2>/dev/null; echo rc=$?");
    EXPECT_EQ(out.out.find("NEWSECRET"), std::string::npos) << out.out;
  } catch (const SandboxError& e) {
    EXPECT_EQ(e.codeName(), "E_SANDBOX_POLICY_DRIFT") << e.what();
  }
}

TEST_F(ManagerTest, ANewHardLinkToAWriteDeniedFileIsNotServedByAnOlderSpare) {
  std::string conf = t_.file("work/conf", "ORIGINAL\n");
  SandboxHandle h = create(SandboxPolicy::fromJson(R"({"filesystem":{"allowWrite":[")" + work_ + R"("],"denyWrite":[")" +
                                                   conf + R"("]},"env":{"allow":["PATH"]}})"));
  EXPECT_EQ(runSh(h, "echo ok").out, "ok\n");
  ASSERT_TRUE(eventually(oneSpareWaiting));
  std::filesystem::create_hard_link(conf, work_ + "/alias");
  // A fresh spawn refuses to run with the write deny reduced to one name; an
  // older spare would not know and let the alias write the file.
  try {
    runSh(h, "echo pwned > " + work_ + "/alias");
  } catch (const SandboxError& e) {
    EXPECT_EQ(e.codeName(), "E_SANDBOX_SPAWN_FAILED") << e.what();
  }
  std::ifstream in(conf);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "ORIGINAL");
}

TEST_F(ManagerTest, AVolumeUnmountedOnTheHostIsNotServedByAnOlderSpare) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs on the host needs root; the unprivileged run cannot set this up";
  std::string vol = t_.dir("vol");
  testing::HostTmpfs volume(vol);
  ASSERT_TRUE(volume.mounted()) << std::strerror(errno);
  t_.file("vol/data", "ON-THE-VOLUME\n");
  SandboxHandle h = create(policy());
  EXPECT_EQ(runSh(h, "cat " + vol + "/data").out, "ON-THE-VOLUME\n");
  ASSERT_TRUE(eventually(oneSpareWaiting));
  ASSERT_TRUE(volume.detach()) << std::strerror(errno);
  auto out = runSh(h, "cat " + vol + "/data 2>/dev/null; echo rc=$?");
  EXPECT_EQ(out.out, "rc=1\n") << "the sandbox still showed a volume the host had unmounted";
}

// Whole-sandbox limits need a cgroup controller; without one (the
// unprivileged re-run) the library refuses the spawn, naming the limit.
bool cgroupUsable(platform::CgroupController c) {
  return std::holds_alternative<platform::CgroupHierarchy>(platform::findCgroupController(c));
}

TEST_F(ManagerTest, AMemoryLimitBelowTheSupervisorsSizeStillRunsAndHoldsForTheWholeSandbox) {
  // The sandbox's init is a copy of this (large, multi-threaded) process; the
  // limit is for the program.
  SandboxHandle h = create(policy(R"(,"limits":{"memoryBytes":67108864,"pids":0,"cpuSeconds":0,"fileSizeBytes":0})"));
  if (!cgroupUsable(platform::CgroupController::kMemory)) {
    ASSERT_NE(::geteuid(), 0u) << "root, yet no usable memory cgroup";
    SandboxError refused = expectError([&] { runSh(h, "echo ok"); });
    EXPECT_EQ(refused.codeName(), "E_SANDBOX_SPAWN_FAILED");
    EXPECT_NE(std::string(refused.what()).find("limits.memoryBytes: enforced per process only"), std::string::npos)
        << refused.what();
    return;
  }
  auto small = runSh(h, "echo ok");
  EXPECT_EQ(small.out, "ok\n");
  EXPECT_EQ(small.completion.limit, std::nullopt);
  // 200 MiB in the private /tmp (a tmpfs: no address space at all): the sandbox is killed.
  auto big = runSh(h, "dd if=/dev/zero of=/tmp/balloon bs=1M count=200 2>/dev/null; echo rc=$?; sleep 5");
  EXPECT_NE(big.out, "rc=0\n") << "200 MiB of tmpfs fit under a 64 MiB limit";
  EXPECT_EQ(big.completion.limit, "limits.memoryBytes");
  EXPECT_EQ(big.completion.exitCode, 137);
  EXPECT_TRUE(auditedWhere([](const nlohmann::json& j) {
    return j["event"] == "exit" && j.contains("limit") && j["limit"] == "limits.memoryBytes";
  }));
}

TEST_F(ManagerTest, ACpuTimeKillOfTheWholeSandboxIsReportedInTheCompletionAndTheExitEvent) {
  SandboxHandle h = create(policy(R"(,"limits":{"memoryBytes":0,"pids":0,"cpuSeconds":1,"fileSizeBytes":0})"));
  if (!cgroupUsable(platform::CgroupController::kCpu)) {
    ASSERT_NE(::geteuid(), 0u) << "root, yet no usable cpu cgroup";
    SandboxError refused = expectError([&] { runSh(h, "true"); });
    EXPECT_NE(std::string(refused.what()).find("limits.cpuSeconds: enforced per process only"), std::string::npos)
        << refused.what();
    return;
  }
  EXPECT_EQ(runSh(h, "echo quick").completion.limit, std::nullopt);
  // Two busy shells: each alone stays under a per-process limit for a while, together they pass 1 s.
  auto hogs = runSh(h, "while :; do :; done & while :; do :; done & wait");
  EXPECT_EQ(hogs.completion.limit, "limits.cpuSeconds");
  EXPECT_EQ(hogs.completion.exitCode, 137);
  EXPECT_EQ(hogs.completion.signalCode, "SIGKILL");
  EXPECT_TRUE(auditedWhere([](const nlohmann::json& j) {
    return j["event"] == "exit" && j.contains("limit") && j["limit"] == "limits.cpuSeconds" &&
           j["cpuTimeMs"].get<long>() >= 1000;
  }));
}

TEST_F(ManagerTest, NarrowingToAWholeSandboxLimitWithoutItsCgroupIsUnsupportedNamingIt) {
  SandboxHandle h = create(policy());
  std::string narrowed;  // the limits narrowed so far: each narrow() keeps them
  for (auto [field, controller] : {std::pair{"memoryBytes", platform::CgroupController::kMemory},
                                   std::pair{"cpuSeconds", platform::CgroupController::kCpu}}) {
    const std::string limit = std::string("\"") + field + "\":1073741824";
    const std::string limits = ",\"limits\":{" + narrowed + (narrowed.empty() ? "" : ",") + limit + "}";
    if (cgroupUsable(controller)) {
      EXPECT_NO_THROW(h.narrow(policy(limits))) << field;
      narrowed += (narrowed.empty() ? "" : ",") + limit;
      continue;
    }
    SandboxError e = expectError([&] { h.narrow(policy(limits)); });
    EXPECT_EQ(e.codeName(), "E_SANDBOX_NARROWING_UNSUPPORTED");
    EXPECT_NE(std::string(e.what()).find(std::string("limits.") + field), std::string::npos) << e.what();
  }
}

TEST_F(ManagerTest, ASpareHoldsNoCopyOfAnotherChildsStdin) {
  SandboxHandle h = create(policy());
  EXPECT_EQ(runSh(h, "echo ok").out, "ok\n");
  ASSERT_TRUE(eventually(oneSpareWaiting));
  // cat takes the spare. Another run ends while cat runs, so the next spare
  // is built by a supervisor that holds the write end of cat's stdin.
  stockade::Run cat = h.run({.argv = {"/bin/cat"}, .correlationId = "cat", .cwd = work_});
  EXPECT_EQ(runSh(h, "echo ok").out, "ok\n");
  ASSERT_TRUE(eventually([] { return sparesWaiting() == 1; }));
  cat.closeStdin();
  EXPECT_EQ(cat.completed.wait_for(10s), std::future_status::ready)
      << "cat never saw EOF on stdin: the spare kept a copy of its write end";
}

}  // namespace
}  // namespace stockade
