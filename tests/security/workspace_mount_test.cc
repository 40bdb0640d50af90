// The workspace at /workspace, from inside: `stockade run --workspace DIR`
// shows DIR there with the policy's rules for DIR -- a denyWrite path, a
// protected name and a denyRead path under the workspace hold through
// /workspace exactly as at the host path, each beside the allowed neighbour;
// a workspace the policy does not make writable is read-only there; writes
// outside stay refused; ".." from /workspace reaches the sandbox's own root,
// not the workspace's host parent; a file uploaded through the file API at
// /workspace/x is what a process reads there, and back.
#include <sys/stat.h>

#include "stockade/policy.h"
#include "stockade/rules.h"
#include "stockade/workspace.h"
#include "tests/security/sandbox_fixture.h"

namespace stockade::testing {
namespace {

class WorkspaceMountTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    file(ws + "/secret/key", "WORKSPACE-SECRET\n");
    file(ws + "/locked/file", "LOCKED-ORIGINAL\n");
    file(ws + "/sub/inner", "INNER\n");
    policy["filesystem"] = {{"denyRead", {"./secret", "/etc/shadow"}},
                            {"allowRead", nlohmann::json::array()},
                            {"allowWrite", {"."}},
                            {"denyWrite", {"./locked"}}};
  }

  // `sh -c SCRIPT` under `stockade run --workspace ws` (no --cwd: the default),
  // with the probe as $P.
  ProcessResult inside(const std::string& script, const std::vector<std::string>& flags = {}) {
    const std::string policyPath = root_ + "/policy.json";
    std::ofstream(policyPath) << policy.dump();
    std::vector<std::string> argv = {stockadeBinary(), "run", "-T", "--policy", policyPath, "--workspace", ws,
                                     "--env", "P=" + probe_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    return runProcess(argv);
  }
  static bool refused(const ProcessResult& r, const std::string& errnoName) {
    return r.out.find("errno=" + errnoName) != std::string::npos;
  }
  static bool exists(const std::string& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
  }
};

TEST_F(WorkspaceMountTest, TheWorkspaceIsTheDefaultCwdAndIsTheHostDirectory) {
  auto r = inside("pwd; $P cat /workspace/README && $P write /workspace/made-inside && echo end");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "/workspace\nWORKSPACE-README\nend\n");
  EXPECT_EQ(slurp(ws + "/made-inside"), "probe\n") << "written through /workspace, landed in the host directory";
  // A relative --cwd is beneath /workspace.
  r = inside("pwd; $P cat inner", {"--cwd", "sub"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "/workspace/sub\nINNER\n");
}

TEST_F(WorkspaceMountTest, ADenyWritePathUnderTheWorkspaceRefusesWritesThroughWorkspace) {
  auto r = inside("$P write /workspace/locked/file; $P create /workspace/locked/new; $P unlink /workspace/locked/file;"
                  " echo end");
  EXPECT_NE(r.out.find("end"), std::string::npos) << "the program ran: " << r.out << r.err;
  EXPECT_EQ(r.out, "errno=EACCES\nerrno=EACCES\nerrno=EACCES\nend\n") << r.err;
  EXPECT_EQ(slurp(ws + "/locked/file"), "LOCKED-ORIGINAL\n");
  EXPECT_FALSE(exists(ws + "/locked/new"));
  // The neighbour beside it, through /workspace, and the same rule at the host path.
  auto ok = inside("$P write /workspace/unlocked && $P write " + ws + "/locked/file; echo end");
  EXPECT_EQ(ok.out, "errno=EACCES\nend\n") << ok.err;
  EXPECT_EQ(slurp(ws + "/unlocked"), "probe\n");
  EXPECT_EQ(slurp(ws + "/locked/file"), "LOCKED-ORIGINAL\n");
}

TEST_F(WorkspaceMountTest, ProtectedNamesUnderTheWorkspaceAreRefusedThroughWorkspace) {
  auto r = inside("$P write /workspace/.bashrc; $P write /workspace/.git/hooks/pre-commit;"
                  " $P create /workspace/.git/hooks/post-checkout; $P mkdir /workspace/sub/.vscode;"
                  " $P create /workspace/sub/.zshrc; echo end");
  EXPECT_NE(r.out.find("end"), std::string::npos) << "the program ran: " << r.out << r.err;
  EXPECT_EQ(r.out, "errno=EACCES\nerrno=EACCES\nerrno=EACCES\nerrno=EACCES\nerrno=EACCES\nend\n") << r.err;
  EXPECT_EQ(slurp(ws + "/.bashrc"), "ORIGINAL-BASHRC\n");
  EXPECT_EQ(slurp(ws + "/.git/hooks/pre-commit"), "ORIGINAL-HOOK\n");
  EXPECT_FALSE(exists(ws + "/.git/hooks/post-checkout"));
  EXPECT_FALSE(exists(ws + "/sub/.zshrc"));
  EXPECT_FALSE(exists(ws + "/sub/.vscode"));
  auto ok = inside("$P write /workspace/bashrc-notes && $P create /workspace/sub/zshrc && echo end");
  EXPECT_EQ(ok.out, "end\n") << ok.err;
  EXPECT_EQ(slurp(ws + "/bashrc-notes"), "probe\n");
}

TEST_F(WorkspaceMountTest, SymlinksFollowedThroughWorkspaceAreDecidedByWhatTheyName) {
  // Relative links resolve in the child's view (beneath /workspace), absolute
  // ones as the child spells them: each write is decided at the host name.
  ASSERT_EQ(::symlink(".bashrc", (ws + "/rc-link").c_str()), 0);
  ASSERT_EQ(::symlink("locked/file", (ws + "/locked-link").c_str()), 0);
  ASSERT_EQ(::symlink("/workspace/locked/file", (ws + "/abs-locked-link").c_str()), 0);
  ASSERT_EQ(::symlink("sub/inner", (ws + "/inner-link").c_str()), 0);
  ASSERT_EQ(::symlink("/workspace/sub/made-by-link", (ws + "/abs-new-link").c_str()), 0);
  auto r = inside("$P write /workspace/rc-link; $P write /workspace/locked-link; $P write /workspace/abs-locked-link;"
                  " cd /workspace/sub && $P write ../rc-link; $P write /workspace/inner-link &&"
                  " $P write /workspace/abs-new-link && echo end");
  EXPECT_EQ(r.out, "errno=EACCES\nerrno=EACCES\nerrno=EACCES\nerrno=EACCES\nend\n") << r.err;
  EXPECT_EQ(slurp(ws + "/.bashrc"), "ORIGINAL-BASHRC\n");
  EXPECT_EQ(slurp(ws + "/locked/file"), "LOCKED-ORIGINAL\n");
  EXPECT_EQ(slurp(ws + "/sub/inner"), "probe\n") << "the allowed neighbour, through a relative link";
  EXPECT_EQ(slurp(ws + "/sub/made-by-link"), "probe\n") << "a new file through an absolute /workspace link";
}

TEST_F(WorkspaceMountTest, ADenyReadPathUnderTheWorkspaceIsUnreadableThroughWorkspace) {
  auto r = inside("$P cat /workspace/secret/key; $P ls /workspace/secret; $P cat /workspace/README; echo end");
  EXPECT_EQ(r.out, "errno=ENOENT\nWORKSPACE-README\nend\n") << r.err;
  EXPECT_EQ(r.out.find("WORKSPACE-SECRET"), std::string::npos);
  // Nor through a link planted in the workspace, nor by its host path.
  ASSERT_EQ(::symlink((ws + "/secret/key").c_str(), (ws + "/to-secret").c_str()), 0);
  r = inside("$P cat /workspace/to-secret; $P cat " + ws + "/secret/key; echo end");
  EXPECT_EQ(r.out, "errno=ENOENT\nerrno=ENOENT\nend\n") << r.err;
}

TEST_F(WorkspaceMountTest, TheWorkspaceIsReadOnlyWhenThePolicyDoesNotAllowWritingIt) {
  policy["filesystem"]["allowWrite"] = nlohmann::json::array();
  policy["filesystem"]["denyWrite"] = nlohmann::json::array();
  auto r = inside("$P write /workspace/new; $P write /workspace/README; $P mkdir /workspace/dir; $P cat /workspace/README;"
                  " $P write /tmp/scratch && echo end");
  EXPECT_EQ(r.out, "errno=EROFS\nerrno=EROFS\nerrno=EROFS\nWORKSPACE-README\nend\n") << r.err;
  EXPECT_FALSE(exists(ws + "/new"));
  EXPECT_FALSE(exists(ws + "/dir"));
  EXPECT_EQ(slurp(ws + "/README"), "WORKSPACE-README\n");
}

TEST_F(WorkspaceMountTest, WritesOutsideTheWorkspaceStayRefused) {
  auto r = inside("$P write " + outside + "/target.txt; $P write /workspace-sibling; $P write /new-at-root;"
                  " $P write /workspace/ok && echo end");
  EXPECT_EQ(r.out, "errno=EROFS\nerrno=EROFS\nerrno=EROFS\nend\n") << r.err;
  EXPECT_EQ(slurp(outside + "/target.txt"), "OUTSIDE-ORIGINAL\n");
  EXPECT_EQ(slurp(ws + "/ok"), "probe\n");
}

TEST_F(WorkspaceMountTest, DotDotFromTheWorkspaceIsTheSandboxRootNotTheHostParent) {
  // The workspace's host parent holds `outside` and `policy.json` beside `ws`.
  ASSERT_EQ(::symlink("../outside/target.txt", (ws + "/up").c_str()), 0);
  auto r = inside("cd /workspace/.. && pwd && $P ls . | grep -cx -e outside -e ws -e policy.json;"
                  " $P cat /workspace/../outside/target.txt; $P write /workspace/../outside/target.txt;"
                  " $P write /workspace/up; $P cat /workspace/up; $P cat /workspace/sub/../README; echo end");
  EXPECT_EQ(r.out, "/\n0\nerrno=ENOENT\nerrno=ENOENT\nerrno=ENOENT\nerrno=ENOENT\nWORKSPACE-README\nend\n") << r.err;
  EXPECT_EQ(slurp(outside + "/target.txt"), "OUTSIDE-ORIGINAL\n");
  // The host path of the workspace stays visible at its own path, with the
  // policy's rules there: its parent readable (reads are deny-then-allow),
  // not writable.
  r = inside("$P cat " + ws + "/up; $P write " + ws + "/up; echo end");
  EXPECT_EQ(r.out, "OUTSIDE-ORIGINAL\nerrno=EROFS\nend\n") << r.err;
  EXPECT_EQ(slurp(outside + "/target.txt"), "OUTSIDE-ORIGINAL\n");
}

TEST_F(WorkspaceMountTest, AFileUploadedAtWorkspaceXIsWhatAProcessSeesThereAndBack) {
  auto derived = derive(SandboxPolicy::fromJson(policy.dump()), {.home = home, .cwd = ws, .tmpdir = "/tmp"});
  ASSERT_TRUE(std::holds_alternative<DerivedRules>(derived)) << std::get<PolicyError>(derived).text();
  auto rules = std::make_shared<DerivedRules>(std::get<DerivedRules>(derived));
  auto opened = Workspace::open({.hostPath = ws, .rules = [rules] { return *rules; }});
  ASSERT_TRUE(std::holds_alternative<Workspace>(opened)) << std::get<WorkspaceError>(opened).message;
  Workspace& files = std::get<Workspace>(opened);
  ASSERT_FALSE(files.upload("/workspace/sub/from-api.txt", "UPLOADED-THROUGH-THE-API\n"));
  // The same rule refuses the API and the process alike.
  auto denied = files.upload("/workspace/locked/from-api.txt", "x");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->codeName(), "permission_denied");

  auto r = inside("$P cat /workspace/sub/from-api.txt && echo FROM-THE-PROCESS > /workspace/sub/from-proc.txt &&"
                  " $P write /workspace/locked/from-proc.txt; echo end");
  EXPECT_EQ(r.out, "UPLOADED-THROUGH-THE-API\nerrno=EACCES\nend\n") << r.err;
  auto back = files.download("/workspace/sub/from-proc.txt");
  ASSERT_TRUE(std::holds_alternative<std::string>(back)) << std::get<WorkspaceError>(back).message;
  EXPECT_EQ(std::get<std::string>(back), "FROM-THE-PROCESS\n");
  EXPECT_FALSE(exists(ws + "/locked/from-api.txt"));
  EXPECT_FALSE(exists(ws + "/locked/from-proc.txt"));
}

}  // namespace
}  // namespace stockade::testing
