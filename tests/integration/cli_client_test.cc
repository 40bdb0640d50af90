// The stockade CLI as a client of the real stockaded (`stockade sandbox ...`).
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/daemon_process.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {
namespace {

using nlohmann::json;

// The daemon's baseline: every field spelled out, so that the bundled
// default (what `sandbox create` without --policy asks for) narrows it.
constexpr const char* kBaseline = R"({
  "filesystem": {"denyRead": [], "allowRead": [], "allowWrite": ["."], "denyWrite": []},
  "network": {"allowedDomains": [], "deniedDomains": [], "allowUnixSockets": [], "allowLocalBinding": false},
  "env": {"allow": ["PATH", "HOME", "LANG", "TERM"]},
  "limits": {"memoryBytes": 0, "pids": 0, "cpuSeconds": 0, "fileSizeBytes": 0}})";

DaemonProcess::Options withBaseline(const TempDir& dir) {
  DaemonProcess::Options o;
  o.extraArgs = {"--policy", dir.file("baseline.json", kBaseline)};
  return o;
}

class CliClientTest : public ::testing::Test {
 protected:
  CliClientTest() : daemon(dir, withBaseline(dir)) {}

  // The CLI running `args`, with --connect and --token-file right after the
  // command's name (before an exec's program).
  ProcessResult cli(std::vector<std::string> args, bool withToken = true) {
    std::vector<std::string> flags = {"--connect", "unix:" + daemon.socketPath()};
    if (withToken) flags.insert(flags.end(), {"--token-file", daemon.tokenFile()});
    std::size_t at = args[0] == "sandbox" ? 2 : 1;
    args.insert(args.begin() + static_cast<long>(std::min(at, args.size())), flags.begin(), flags.end());
    std::vector<std::string> argv = {stockadeBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(argv);
  }

  TempDir dir;
  DaemonProcess daemon;
};

TEST_F(CliClientTest, SandboxCreateListNarrowAndRemove) {
  auto r = cli({"sandbox", "create"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_TRUE(id.starts_with("sb_")) << r.out;
  r = cli({"sandbox", "ls"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find(id), std::string::npos);
  EXPECT_NE(r.out.find("active"), std::string::npos);
  r = cli({"sandbox", "ls", "--json"});
  EXPECT_EQ(json::parse(r.out)["items"][0]["id"], id);
  std::string narrow = dir.file("narrow.json", R"({"filesystem":{"allowWrite":[]}})");
  r = cli({"sandbox", "narrow", id, "--policy", narrow});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("narrowed " + id), std::string::npos);
  r = cli({"sandbox", "show", id});
  EXPECT_EQ(json::parse(r.out)["effectivePolicy"]["filesystem"]["allowWrite"], json::array());
  r = cli({"sandbox", "rm", id});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = cli({"sandbox", "ls", "--json"});
  EXPECT_EQ(json::parse(r.out)["items"].size(), 0u);
}

TEST_F(CliClientTest, ARefusalReadsWellAndExits1) {
  // Wider than the baseline, and not a system tree (those are refused before admission).
  std::string wide = dir.file("wide.json", R"({"filesystem":{"allowWrite":["/srv/data"]}})");
  auto r = cli({"sandbox", "create", "--policy", wide});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(r.err.starts_with("stockade: sandbox create: policy is wider than the daemon's baseline")) << r.err;
  EXPECT_NE(r.err.find("\"/srv/data\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(E_SANDBOX_POLICY_CONFLICT)"), std::string::npos) << r.err;
  std::string broken = dir.file("broken.json", R"({"network":{"allowedDomains":["*.com"]}})");
  r = cli({"sandbox", "create", "--policy", broken});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("network.allowedDomains[0]"), std::string::npos) << "checked before anything is sent: " << r.err;
  r = cli({"sandbox", "rm", "sb_00000000000000000000000000000000"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("(not_found)"), std::string::npos) << r.err;
}

TEST_F(CliClientTest, AMissingTokenSaysHowToGiveOne) {
  auto r = cli({"sandbox", "ls"}, false);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("(unauthorized)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--token-file"), std::string::npos) << r.err;
  // From the environment instead.
  r = runProcess({"env", "STOCKADE_CONNECT=unix:" + daemon.socketPath(), "STOCKADE_TOKEN_FILE=" + daemon.tokenFile(),
                  stockadeBinary(), "sandbox", "ls", "--json"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out)["items"].is_array());
}

TEST_F(CliClientTest, AnUnreachableDaemonIsNamed) {
  auto r = runProcess({stockadeBinary(), "sandbox", "ls", "--connect", "unix:" + (dir / "nothing.sock")});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("cannot connect to unix:" + (dir / "nothing.sock")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is stockaded running?"), std::string::npos) << r.err;
  r = runProcess({stockadeBinary(), "sandbox", "ls", "--connect", "nonsense"});
  EXPECT_EQ(r.exitCode, 2);
  r = runProcess({stockadeBinary(), "sandbox", "frobnicate", "--connect", "unix:/x"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("unknown subcommand"), std::string::npos);
}


}  // namespace
}  // namespace stockade::testing

// ---- processes through the CLI ----------------------------------------------

#include <pty.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>

#include <thread>

namespace stockade::testing {
namespace {

class CliProcessTest : public CliClientTest {
 protected:
  // A sandbox under a policy with every field spelled out.
  std::string sandbox() {
    std::string policy = dir.file("policy.json", kBaseline);
    auto r = cli({"sandbox", "create", "--policy", policy});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }
};

TEST_F(CliProcessTest, ExecStreamsStdoutAndStderrAndExitsWithTheStatus) {
  std::string sb = sandbox();
  auto r = cli({"exec", sb, "--", "/bin/sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_EQ(r.exitCode, 7) << r.err;
  EXPECT_EQ(r.out, "out\n");
  EXPECT_NE(r.err.find("err\n"), std::string::npos) << r.err;
  r = cli({"exec", sb, "/bin/sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(r.exitCode, 128 + SIGTERM) << r.err;
  EXPECT_NE(r.err.find("killed by SIGTERM"), std::string::npos) << r.err;
  r = cli({"exec", sb, "--env", "GREETING=hi", "--", "/bin/sh", "-c", "echo $GREETING"});
  EXPECT_EQ(r.out, "hi\n");
  r = cli({"exec", sb, "--env", "1BAD=x", "--", "/bin/true"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("env: \"1BAD\""), std::string::npos) << r.err;
  r = cli({"exec", sb, "--", "/nonexistent"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("ENOENT"), std::string::npos) << r.err;
}

TEST_F(CliProcessTest, PsWaitAndKill) {
  std::string sb = sandbox();
  auto started = cli({"exec", "--detach", sb, "--", "/bin/sleep", "60"});
  ASSERT_EQ(started.exitCode, 0) << started.err;
  std::string pid = started.out.substr(0, started.out.find('\n'));
  auto ps = cli({"ps", sb});
  EXPECT_NE(ps.out.find(pid), std::string::npos) << ps.out;
  EXPECT_NE(ps.out.find("running"), std::string::npos) << ps.out;
  auto w = cli({"wait", sb, pid, "--timeout-ms", "100"});
  EXPECT_EQ(w.exitCode, 124) << w.err;
  EXPECT_EQ(cli({"kill", sb, pid, "--signal", "kill"}).exitCode, 0);
  w = cli({"wait", sb, pid});
  EXPECT_EQ(w.exitCode, 128 + SIGKILL);
  EXPECT_EQ(w.out, "signaled SIGKILL\n");
}

// A unix-socket relay to the daemon that cuts its first connection after
// `cutAfter` bytes of reply: what a dropped connection looks like to a client.
class CuttingRelay {
 public:
  CuttingRelay(std::string listenPath, std::string target, std::size_t cutAfter)
      : path_(std::move(listenPath)), target_(std::move(target)), cutAfter_(cutAfter) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path_.c_str(), sizeof sa.sun_path - 1);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ::listen(fd_, 16);
    thread_ = std::thread([this] { loop(); });
  }
  ~CuttingRelay() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int cuts() const { return cuts_; }

 private:
  void loop() {
    for (int n = 0;; ++n) {
      int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      std::thread([this, client, n] { relay(client, n == 0); }).detach();
    }
  }
  void relay(int client, bool cut) {
    int up = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, target_.c_str(), sizeof sa.sun_path - 1);
    if (::connect(up, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      ::close(client);
      ::close(up);
      return;
    }
    std::thread toUp([client, up] {
      char buf[4096];
      for (ssize_t n; (n = ::read(client, buf, sizeof buf)) > 0;)
        if (::send(up, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) break;
      ::shutdown(up, SHUT_WR);
    });
    std::size_t sent = 0;
    char buf[4096];
    for (ssize_t n; (n = ::read(up, buf, sizeof buf)) > 0;) {
      std::size_t take = static_cast<std::size_t>(n);
      if (cut && sent + take > cutAfter_) take = cutAfter_ - sent;
      // MSG_NOSIGNAL: a client gone first must not end the test with SIGPIPE.
      if (::send(client, buf, take, MSG_NOSIGNAL) != static_cast<ssize_t>(take)) break;
      sent += take;
      if (cut && sent >= cutAfter_) {
        ++cuts_;
        break;
      }
    }
    ::shutdown(client, SHUT_RDWR);
    ::shutdown(up, SHUT_RDWR);
    toUp.join();
    ::close(client);
    ::close(up);
  }
  std::string path_, target_;
  std::size_t cutAfter_;
  int fd_ = -1;
  std::atomic<int> cuts_{0};
  std::thread thread_;
};

TEST_F(CliProcessTest, LogsFollowAcrossALostConnectionWithoutLosingOrRepeatingALine) {
  std::string sb = sandbox();
  auto started = cli({"exec", "--detach", sb, "--", "/bin/sh", "-c",
                      "i=1; while [ $i -le 300 ]; do echo line $i; i=$((i+1)); sleep 0.005; done"});
  std::string pid = started.out.substr(0, started.out.find('\n'));
  CuttingRelay relay(dir / "relay.sock", daemon.socketPath(), 3000);
  auto r = runProcess({stockadeBinary(), "logs", sb, pid, "-f", "--connect", "unix:" + (dir / "relay.sock"),
                       "--token-file", daemon.tokenFile()});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(relay.cuts(), 1) << "the first connection was cut mid-stream";
  std::string want;
  for (int i = 1; i <= 300; ++i) want += "line " + std::to_string(i) + "\n";
  EXPECT_EQ(r.out, want);
}

TEST_F(CliProcessTest, AttachPutsTheTerminalInRawModeAndRestoresIt) {
  std::string sb = sandbox();
  auto made = daemon.client().request("POST", "/v1/sandboxes/" + sb + "/ptys", R"({"cmd":"cat","cols":80,"rows":24})");
  ASSERT_EQ(made.status, 200) << made.body;
  std::string pid = nlohmann::json::parse(made.body)["id"];
  int master = -1;
  termios before{};
  pid_t child = ::forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string cliPath = stockadeBinary(), connect = "unix:" + daemon.socketPath(), token = daemon.tokenFile();
    ::execl(cliPath.c_str(), cliPath.c_str(), "attach", sb.c_str(), pid.c_str(), "--connect", connect.c_str(),
            "--token-file", token.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::tcgetattr(master, &before);
  std::string screen;
  auto readUntil = [&](const std::string& want) {
    for (int i = 0; i < 500 && screen.find(want) == std::string::npos; ++i) {
      pollfd p{master, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) {
        char buf[1024];
        ssize_t n = ::read(master, buf, sizeof buf);
        if (n > 0) screen.append(buf, static_cast<std::size_t>(n));
      }
    }
    return screen.find(want) != std::string::npos;
  };
  // Raw mode: the local terminal no longer echoes or cooks; what comes back
  // is the sandbox's terminal echoing, then cat.
  // Waited for, not slept for: a sanitizer build on a loaded machine took
  // longer than a fixed 300 ms to start, and the detach key below then went
  // to a terminal still cooked, so attach never saw it.
  termios during{};
  for (int i = 0; i < 1000; ++i) {
    ::tcgetattr(master, &during);
    if ((during.c_lflag & (ECHO | ICANON)) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(during.c_lflag & (ECHO | ICANON), 0u) << "attach did not put the terminal in raw mode within 20 s";
  ASSERT_EQ(::write(master, "ping\r", 5), 5);
  EXPECT_TRUE(readUntil("ping")) << screen;
  ASSERT_EQ(::write(master, "\x1d", 1), 1);  // Ctrl-]: detach
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  termios after{};
  ::tcgetattr(master, &after);
  EXPECT_EQ(after.c_lflag, before.c_lflag) << "the terminal's mode was not restored";
  EXPECT_EQ(after.c_iflag, before.c_iflag);
  EXPECT_EQ(after.c_oflag, before.c_oflag);
  ::close(master);
}


// `stockade cp|ls|persist|restore|snapshot`: the workspace of a sandbox.
class CliWorkspaceTest : public CliClientTest {
 protected:
  void SetUp() override {
    auto r = cli({"sandbox", "create", "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    id = json::parse(r.out)["id"];
    workspace = json::parse(r.out)["workspace"];
  }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string id, workspace;
};

TEST_F(CliWorkspaceTest, CpCopiesFilesAndTreesBothWaysAndLsListsThem) {
  dir.file("proj/a.txt", "one\n");
  dir.file("proj/sub/b.txt", "two\n");
  auto r = cli({"cp", dir / "proj", id + ":proj"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(slurp(workspace + "/proj/sub/b.txt"), "two\n");
  r = cli({"cp", dir / "proj/a.txt", id + ":/workspace/proj/"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = cli({"cp", dir / "proj/a.txt", id + ":renamed.txt"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(slurp(workspace + "/renamed.txt"), "one\n");
  r = cli({"ls", id + ":proj"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "file    a.txt\ndir     sub/\n");
  r = cli({"ls", id, "--json"});
  EXPECT_EQ(json::parse(r.out)["items"].size(), 2u) << r.out;

  r = cli({"cp", id + ":proj", dir / "back"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(slurp(dir / "back/a.txt"), "one\n");
  EXPECT_EQ(slurp(dir / "back/sub/b.txt"), "two\n");
  r = cli({"cp", id + ":proj/sub/b.txt", dir / "b-copy.txt"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(slurp(dir / "b-copy.txt"), "two\n");
  r = cli({"cp", id + ":missing.txt", dir / "m.txt"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("(not_found)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "m.txt"));
  r = cli({"cp", dir / "proj/a.txt", dir / "elsewhere.txt"});
  EXPECT_EQ(r.exitCode, 2) << "two host paths";
}

// `stockade cp` in a terminal: the CLI's output as a pty shows it, and its exit status.
struct TerminalRun {
  std::string screen;
  int status = -1;
};
TerminalRun runInTerminal(const std::vector<std::string>& args) {
  TerminalRun out;
  int master = -1;
  pid_t child = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (child < 0) return out;
  if (child == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  char buf[4096];
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 30'000) <= 0) break;
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child and its terminal are gone
    out.screen.append(buf, static_cast<std::size_t>(n));
  }
  ::waitpid(child, &out.status, 0);
  ::close(master);
  return out;
}

TEST_F(CliWorkspaceTest, CpShowsProgressOnStderrWhenStdoutIsATerminalAndNotOtherwise) {
  std::string big(6u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 251);
  std::string src = dir.file("big.bin", big);
  std::vector<std::string> base = {stockadeBinary(), "cp", "--connect", "unix:" + daemon.socketPath(), "--token-file",
                                   daemon.tokenFile()};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  };
  // Up: the total is known.
  TerminalRun up = runInTerminal(with({src, id + ":big.bin"}));
  ASSERT_TRUE(WIFEXITED(up.status) && WEXITSTATUS(up.status) == 0) << up.status << " " << up.screen;
  EXPECT_NE(up.screen.find("\rstockade cp " + src + ": "), std::string::npos) << up.screen;
  EXPECT_NE(up.screen.find(" / 6.0 MiB"), std::string::npos) << up.screen;
  EXPECT_EQ(slurp(workspace + "/big.bin"), big);
  // Down: as the bytes arrive.
  TerminalRun down = runInTerminal(with({id + ":big.bin", dir / "back.bin"}));
  ASSERT_TRUE(WIFEXITED(down.status) && WEXITSTATUS(down.status) == 0) << down.status << " " << down.screen;
  EXPECT_NE(down.screen.find("\rstockade cp " + id + ":/workspace/big.bin: "), std::string::npos) << down.screen;
  EXPECT_NE(down.screen.find(" MiB"), std::string::npos) << down.screen;
  EXPECT_EQ(slurp(dir / "back.bin"), big);
  // Not a terminal: nothing but the copy.
  auto r = cli({"cp", src, id + ":again.bin"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "");
  // Small transfers show none, on a terminal too.
  TerminalRun small = runInTerminal(with({dir.file("small.txt", "small"), id + ":small.txt"}));
  ASSERT_TRUE(WIFEXITED(small.status) && WEXITSTATUS(small.status) == 0) << small.screen;
  EXPECT_EQ(small.screen.find("MiB"), std::string::npos) << small.screen;
}

TEST_F(CliWorkspaceTest, CpIntoASandboxRefusesWhatItsPolicyDeniesBesideTheAllowedNeighbour) {
  std::string src = dir.file("hook.sh", "#!/bin/sh\necho pwned\n");
  for (const std::string& to : {id + ":.git/hooks/pre-commit", id + ":.bashrc", id + ":../escape.sh"}) {
    SCOPED_TRACE(to);
    auto r = cli({"cp", src, to});
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_TRUE(r.err.find("(permission_denied)") != std::string::npos ||
                r.err.find("(invalid_path)") != std::string::npos)
        << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(workspace + "/.git/hooks/pre-commit"));
  EXPECT_FALSE(std::filesystem::exists(workspace + "/.bashrc"));
  auto r = cli({"cp", src, id + ":hooks/pre-commit"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(slurp(workspace + "/hooks/pre-commit"), "#!/bin/sh\necho pwned\n");
}

// A tree out of a sandbox is untrusted: a link in it leading out of the
// target is refused by the importer, and nothing is written on the host.
TEST_F(CliWorkspaceTest, CpOutOfASandboxRefusesATreeWithALinkLeadingOut) {
  std::filesystem::create_directories(workspace + "/out");
  std::ofstream(workspace + "/out/ok.txt") << "ok";
  std::filesystem::create_symlink(dir / "victim", workspace + "/out/evil");
  auto r = cli({"cp", id + ":out", dir / "dest"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("evil"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "dest")) << "a refused tree leaves nothing";
  // The neighbour: a link that stays inside the tree comes through.
  std::filesystem::remove(workspace + "/out/evil");
  std::filesystem::create_symlink("ok.txt", workspace + "/out/alias");
  r = cli({"cp", id + ":out", dir / "dest"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(slurp(dir / "dest/alias"), "ok");
}

TEST_F(CliWorkspaceTest, PersistRestoreAndSnapshotFromTheCli) {
  dir.file("app/main.py", "v1");
  ASSERT_EQ(cli({"cp", dir / "app", id + ":app"}).exitCode, 0);
  auto r = cli({"persist", id, "app", "--exclude", "tmp", "--timeout", "60"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("persisted /workspace/app: ")) << r.out;
  std::ofstream(workspace + "/app/main.py") << "v2";
  r = cli({"restore", id, "/workspace/app"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(slurp(workspace + "/app/main.py"), "v1");
  r = cli({"restore", id, "never"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("no checkpoint"), std::string::npos) << r.err;
  r = cli({"persist", id, "app", "--timeout", "0"});
  EXPECT_EQ(r.exitCode, 2) << r.err;

  r = cli({"snapshot", id, "--key", "cli-op"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::string snap = r.out.substr(0, r.out.find('\n'));
  EXPECT_TRUE(snap.starts_with("snap_")) << r.out;
  r = cli({"snapshot", "--lookup", "cli-op", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["id"], snap);
  r = cli({"sandbox", "create", "--from-snapshot", snap, "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(slurp(json::parse(r.out)["workspace"].get<std::string>() + "/app/main.py"), "v1");
}

// `stockade code`: the kernel keeps its state between invocations; output,
// results and tracebacks read as at a Python prompt; the exit status says
// how the code ended.
TEST_F(CliClientTest, CodeKeepsItsStateAndExitsByHowTheCodeEnded) {
  auto created = cli({"sandbox", "create"});
  ASSERT_EQ(created.exitCode, 0) << created.err;
  const std::string id = created.out.substr(0, created.out.find('\n'));
  auto r = cli({"code", id, "x = 6 * 7\nprint('hi')"});
  if (r.exitCode == 1 && r.err.find("IPython") != std::string::npos)
    GTEST_SKIP() << "python3 cannot import IPython here (scripts/bootstrap installs python3-ipython): " << r.err;
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "hi\n");
  r = runProcess({stockadeBinary(), "code", "--connect", "unix:" + daemon.socketPath(), "--token-file",
                  daemon.tokenFile(), id, "-"},
                 "x + 1");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "43\n") << "the code came from standard input and saw the earlier call's x";
  r = cli({"code", id, "1 / 0"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("ZeroDivisionError: division by zero"), std::string::npos) << r.err;
  r = cli({"code", id, "--json", "x"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["results"][0]["text"], "42") << r.out;
  r = cli({"code", id, "--timeout", "0.5", "while True: pass"});
  EXPECT_EQ(r.exitCode, 124) << r.err;
  EXPECT_NE(r.err.find("TimeoutError"), std::string::npos) << r.err;
  r = cli({"code", id, "--language", "ruby", "x"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("supported: [\"python\"]"), std::string::npos) << r.err;
  r = cli({"code", id});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("stockade code: give the sandbox id, then the code"), std::string::npos) << r.err;
  r = cli({"code", id, "--timeout", "soon", "x"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--timeout soon"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stockade::testing
