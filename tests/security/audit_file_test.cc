// The audit log cannot be redirected by the sandboxed program (issue 9.3):
// it is opened once, outside every writable tree, never through a symlink.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/security/sandbox_fixture.h"

namespace stockade::testing {
namespace {

class AuditFileTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    file(home + "/.bashrc", "ORIGINAL-BASHRC\n");
    audit_ = root_ + "/audit.jsonl";  // beside ws, which is the only writable tree
  }
  ProcessResult shell(const std::string& script, const std::string& auditPath) {
    auto argv = stockadeArgv({"--audit", auditPath});
    argv.insert(argv.end(), {"/bin/sh", "-c", script});
    return runProcess(argv);
  }
  std::vector<std::string> events(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line)["event"]);
    return out;
  }
  std::string audit_;
};

TEST_F(AuditFileTest, AChildReplacingTheAuditFileWithASymlinkToBashrcNeverGetsAnEventWrittenThere) {
  auto r = shell("rm -f " + audit_ + " || echo REMOVE-REFUSED; ln -sf " + home + "/.bashrc " + audit_ +
                     " || echo LINK-REFUSED; echo RAN",
                 audit_);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("RAN"), std::string::npos) << "the program ran";
  EXPECT_NE(r.out.find("REMOVE-REFUSED"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("LINK-REFUSED"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(slurp(home + "/.bashrc"), "ORIGINAL-BASHRC\n");
  ASSERT_FALSE(std::filesystem::is_symlink(audit_));
  auto written = events(audit_);
  ASSERT_GE(written.size(), 2u);
  EXPECT_EQ(written.front(), "spawn");
  EXPECT_EQ(written.back(), "exit");
}

TEST_F(AuditFileTest, AnAuditPathInsideAWritableTreeIsRefusedNamingTheTreeAndNothingRuns) {
  auto r = shell("echo RAN > " + ws + "/ran", ws + "/audit.jsonl");
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_NE(r.err.find("writable tree \"" + ws + "\""), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(ws + "/audit.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(ws + "/ran")) << "the program ran although its audit log was refused";
}

TEST_F(AuditFileTest, ASymlinkPlantedAtTheAuditPathIsRefusedAndItsTargetUntouched) {
  std::filesystem::create_symlink(home + "/.bashrc", audit_);
  auto r = shell("echo RAN", audit_);
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_NE(r.err.find("is a symlink"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("RAN"), std::string::npos);
  EXPECT_EQ(slurp(home + "/.bashrc"), "ORIGINAL-BASHRC\n");
}

TEST_F(AuditFileTest, AHostNameTheChildChoseReachesTheAuditLogAndStderrOnlyEscaped) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "python3 is needed to send raw proxy requests";
  policy["network"] = {{"allowedDomains", {"allowed.test"}}, {"deniedDomains", nlohmann::json::array()}};
  // Raw requests to the proxy whose host names carry shell syntax, quotes,
  // an escape sequence and a newline.
  const std::string script = R"(
import socket
for host in [b"$(touch /tmp/pwned);`id`.test", b"a'b\"c\x1b[31m.test", b"x\x7f\xff\xfe.test"]:
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT " + host + b":443 HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
    s.recv(4096)
    s.close()
print("RAN")
)";
  auto argv = stockadeArgv({"--audit", audit_});
  argv.insert(argv.end(), {"/usr/bin/python3", "-c", script});
  auto r = runProcess(argv);
  ASSERT_NE(r.out.find("RAN"), std::string::npos) << r.err;
  std::ifstream in(audit_);
  int proxyEvents = 0;
  for (std::string line; std::getline(in, line);) {
    for (unsigned char c : line) ASSERT_TRUE(c >= 0x20 && c < 0x7f) << "a raw byte in the audit log: " << line;
    proxyEvents += nlohmann::json::parse(line)["event"] == "proxy";
  }
  EXPECT_GE(proxyEvents, 1) << "the proxy's refusals are audited";
  for (unsigned char c : r.err) ASSERT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << "a raw byte on stderr: " << r.err;
}

}  // namespace
}  // namespace stockade::testing
