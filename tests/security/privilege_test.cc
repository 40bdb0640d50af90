// Escape attempts found in review: a child that is the host's uid 0 (stockade
// run by root) planting setuid files, writing kernel-wide sysctls, and
// reaching host datagram sockets with a unix socket of any type value;
// each beside the allowed neighbour.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/security/sandbox_fixture.h"

namespace stockade::testing {
namespace {

using PrivilegeEscapeTest = SandboxTest;

ProcessResult sh(std::vector<std::string> argv, const std::string& script) {
  argv.insert(argv.end(), {"/bin/sh", "-c", script});
  return runProcess(argv);
}

TEST_F(PrivilegeEscapeTest, SetuidAndSetgidBitsCannotBeSetWhileOrdinaryModesCan) {
  auto r = sh(stockadeArgv(),
              "cp /bin/true ./tool && chmod 755 ./tool && echo mode-ok; "
              "chmod u+s ./tool 2>/dev/null || echo setuid-refused; chmod g+s ./tool 2>/dev/null || echo setgid-refused; "
              "/usr/bin/python3 -c 'import os\ntry:\n os.open(\"made\", os.O_CREAT|os.O_WRONLY, 0o4755); print(\"open-allowed\")\n"
              "except OSError as e: print(\"open-refused\", e.errno)'");
  EXPECT_EQ(r.out, "mode-ok\nsetuid-refused\nsetgid-refused\nopen-refused 1\n") << r.err;
  struct stat st {};
  ASSERT_EQ(::stat((ws + "/tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u) << "no set-id file may reach the host";
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

// In the sandbox's own /tmp no write broker decides (the child writes there
// with rights of its own), so the filter alone keeps a set-id bit off a file
// the child made: its refusal comes with a denial event naming the call.
TEST_F(PrivilegeEscapeTest, TheFilterRefusesSetIdBitsInTheSandboxsOwnTmpWhileOrdinaryModesWork) {
  policy["filesystem"]["allowWrite"] = {ws};  // the private /tmp stays the sandbox's own
  const std::string audit = root_ + "/setid-audit.jsonl";
  auto r = sh(stockadeArgv({"--audit", audit}),
              "cd /tmp && cp /bin/sh ./rootshell && chmod 755 ./rootshell && echo mode-ok; "
              "(chmod u+s ./rootshell) 2>&1 | sed 's/.*: //'; (chmod g+s ./rootshell) 2>&1 | sed 's/.*: //'; "
              "stat -c %a ./rootshell");
  EXPECT_EQ(r.out, "mode-ok\nOperation not permitted\nOperation not permitted\n755\n") << r.err;
  int setId = 0;
  for (const auto& d : auditEvents(audit, "denial"))
    if (d.value("layer", "") == "seccomp" && d.value("syscall", "").starts_with("fchmodat")) ++setId;
  EXPECT_EQ(setId, 2) << "the refusals were not the filter's (no denial event names fchmodat)";
}

TEST_F(PrivilegeEscapeTest, KernelSysctlsAreReadOnlyWhileProcIsReadable) {
  // "Read-only file system": the read-only rebind of /proc/sys refuses, not
  // only Landlock (EACCES) or the missing privilege over the host's sysctls.
  auto r = sh(stockadeArgv(),
              "cat /proc/sys/kernel/ostype; (echo 1 > /proc/sys/kernel/printk_ratelimit) 2>&1 | sed 's/.*: //'");
  EXPECT_EQ(r.out, "Linux\nRead-only file system\n") << r.err;
}

// A pathname datagram socket on the host (journald's and /dev/log are such
// sockets), in the workspace the child sees. Returns its fd; -1 on failure.
int hostDatagramSocket(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd < 0 || path.size() >= sizeof(addr.sun_path)) return -1;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  ::chmod(path.c_str(), 0777);  // reachable by the unprivileged user too
  return fd;
}

TEST_F(PrivilegeEscapeTest, NoUnixSocketOfAnyTypeReachesAHostDatagramSocketWhileStreamPairsWork) {
  const std::string path = ws + "/dg.sock";
  int host = hostDatagramSocket(path);
  ASSERT_GE(host, 0) << std::strerror(errno);
  policy["network"] = {{"allowedDomains", nlohmann::json::array()}, {"allowUnixSockets", nlohmann::json::array()}};
  auto r = probe({"unix-every-type", path});
  // Only the stream and seqpacket pairs exist (4 flag combinations each), and
  // a connected pair cannot send elsewhere.
  EXPECT_EQ(r.out, "sockets=0 pairs=8 stream-pair=ok\n") << r.err;
  char buf[16];
  EXPECT_EQ(::recv(host, buf, sizeof buf, MSG_DONTWAIT), -1) << "nothing reached the host socket";
  EXPECT_EQ(errno, EAGAIN);
  ::close(host);
}

TEST_F(PrivilegeEscapeTest, WithUnixSocketsAllowedTheHostDatagramSocketIsReached) {
  const std::string path = ws + "/dg.sock";
  int host = hostDatagramSocket(path);
  ASSERT_GE(host, 0) << std::strerror(errno);
  policy["network"] = {{"allowedDomains", nlohmann::json::array()}, {"allowUnixSockets", {path}}};
  auto r = probe({"unix-every-type", path});
  // socket() and socketpair(): stream, datagram and seqpacket with 4 flag
  // combinations each; never another type value (SOCK_RAW would be a
  // datagram socket to the kernel, but is not listed).
  EXPECT_EQ(r.out, "sockets=12 pairs=12 stream-pair=ok\n") << r.err;
  char buf[16] = {};
  ASSERT_EQ(::recv(host, buf, sizeof buf, MSG_DONTWAIT), 6) << "the allowed neighbour: a datagram arrives";
  EXPECT_TRUE(std::string(buf, 6) == "ESCAPE" || std::string(buf, 6) == "FDPASS") << buf;
  ::close(host);
}

TEST_F(PrivilegeEscapeTest, AWriteDeniedFileWithAnotherHardLinkIsReportedNotSilentlyWeaker) {
  // The broker refuses writes to a denied path by name; a second name for
  // the file in the workspace reaches it through a writable path.
  file(ws + "/secret.txt", "KEEP\n");
  policy["filesystem"]["denyWrite"] = {ws + "/secret.txt"};
  ASSERT_EQ(::link((ws + "/secret.txt").c_str(), (ws + "/innocent").c_str()), 0);
  auto r = sh(stockadeArgv(), "echo run");
  EXPECT_EQ(r.out, "run\n");
  EXPECT_NE(r.err.find("has other hard links"), std::string::npos) << "the CLI says it runs weaker: " << r.err;
  // Without the second name: no such report.
  ASSERT_EQ(::unlink((ws + "/innocent").c_str()), 0);
  auto clean = sh(stockadeArgv(), "echo run");
  EXPECT_EQ(clean.err.find("hard links"), std::string::npos) << clean.err;
}

}  // namespace
}  // namespace stockade::testing
