// The real stockaded binary, started per test on a temporary unix socket and
// driven by real HTTP clients (curl and Beast).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/daemon_policy.h"
#include "tests/support/daemon_process.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {
namespace {

using nlohmann::json;

ProcessResult curl(const DaemonProcess& d, std::vector<std::string> args) {
  std::vector<std::string> argv = {"curl", "-sS", "--max-time", "30", "--unix-socket", d.socketPath(), "-w",
                                   "\n%{http_code}"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv);
}

// Splits curl's "BODY\nSTATUS".
std::pair<std::string, int> reply(const ProcessResult& r) {
  auto nl = r.out.rfind('\n');
  return {r.out.substr(0, nl), std::stoi(r.out.substr(nl + 1))};
}

TEST(StockadedTest, HealthAnswersWithoutATokenAndReportsTheKernel) {
  TempDir dir;
  DaemonProcess d(dir);
  auto [body, status] = reply(curl(d, {"http://localhost/v1/health"}));
  EXPECT_EQ(status, 200);
  json j = json::parse(body);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_TRUE(j["version"].is_string());
  EXPECT_TRUE(j["landlockAbi"].is_number_integer());
  EXPECT_TRUE(j["seccomp"].is_string());
  EXPECT_TRUE(j["userns"].is_boolean());
}

TEST(StockadedTest, TheSocketIsMode0600AndTheStateDir0700) {
  TempDir dir;
  DaemonProcess d(dir);
  struct stat st{};
  ASSERT_EQ(::lstat(d.socketPath().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::lstat(d.stateDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(StockadedTest, AnOriginHeaderIsRefused) {
  TempDir dir;
  DaemonProcess d(dir);
  auto [body, status] = reply(curl(d, {"-H", "Origin: http://rebound.example", "http://localhost/v1/health"}));
  EXPECT_EQ(status, 403);
  EXPECT_EQ(json::parse(body)["code"], "permission_denied");
}

TEST(StockadedTest, TcpWithoutATokenFileIsRefusedAtStartUp) {
  auto r = runProcess({stockadedBinary(), "--listen", "127.0.0.1:0", "--state-dir", "/var/tmp/unused-state"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--token-file"), std::string::npos) << r.err;
  r = runProcess({stockadedBinary(), "--listen", "0.0.0.0:7070", "--state-dir", "/var/tmp/unused-state"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("loopback"), std::string::npos) << r.err;
}

TEST(StockadedTest, ATokenFileOthersCanReadIsRefused) {
  TempDir dir;
  std::string token = dir.file("token", "0123456789abcdef0123456789\n");
  ::chmod(token.c_str(), 0644);
  auto r = runProcess({stockadedBinary(), "--listen", "unix:" + (dir / "s.sock"), "--state-dir", dir / "state",
                       "--token-file", token});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("chmod 600"), std::string::npos) << r.err;
}

TEST(StockadedTest, UnknownFlagsAndMissingOnesAreUsageErrors) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--bogus"}, {"--state-dir", "/x"}, {"--listen", "unix:/x.sock"},
           {"--listen", "unix:/x.sock", "--state-dir", "/x", "--max-requests", "0"}}) {
    std::vector<std::string> argv = {stockadedBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = runProcess(argv);
    EXPECT_EQ(r.exitCode, 2) << args[0];
    EXPECT_TRUE(r.err.starts_with("stockaded: ")) << r.err;
  }
  EXPECT_EQ(runProcess({stockadedBinary(), "--help"}).exitCode, 0);
}

TEST(StockadedTest, EveryRequestIsOneJsonLineInTheLog) {
  TempDir dir;
  DaemonProcess d(dir);
  curl(d, {"http://localhost/v1/health"});
  curl(d, {"http://localhost/v1/nope"});
  EXPECT_EQ(d.stop(), 0);
  std::stringstream lines(d.log());
  std::string line;
  int requests = 0;
  bool sawNotFound = false;
  while (std::getline(lines, line)) {
    json j = json::parse(line);  // every line is one JSON object
    if (j["event"] != "request") continue;
    ++requests;
    EXPECT_TRUE(j["method"].is_string());
    EXPECT_TRUE(j["durationUs"].is_number());
    if (j["path"] == "/v1/nope") sawNotFound = j["status"] == 404;
  }
  EXPECT_GE(requests, 3);  // DaemonProcess's readiness probe, then ours
  EXPECT_TRUE(sawNotFound);
}

TEST(StockadedTest, SigtermStopsTheDaemonAndRemovesItsSocket) {
  TempDir dir;
  DaemonProcess d(dir);
  std::string sock = d.socketPath();
  EXPECT_EQ(d.stop(), 0);
  struct stat st{};
  EXPECT_NE(::lstat(sock.c_str(), &st), 0);
}

TEST(StockadedTest, OnLoopbackTcpEveryRequestButHealthNeedsTheToken) {
  TempDir dir;
  DaemonProcess::Options o;
  o.tcp = true;
  DaemonProcess d(dir, o);
  ASSERT_GT(d.port(), 0);
  HttpTestClient anonymous("127.0.0.1", d.port());
  EXPECT_EQ(anonymous.request("GET", "/v1/health").status, 200);
  auto refused = anonymous.request("GET", "/v1/sandboxes");
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(json::parse(refused.body)["code"], "unauthorized") << refused.body;
  EXPECT_EQ(d.client().request("GET", "/v1/sandboxes").status, 200);
}

bool eventuallyStatus(HttpTestClient& c, const Headers& auth, int want) {
  for (int i = 0; i < 200; ++i) {
    if (c.request("GET", "/v1/sandboxes", "", auth).status == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(StockadedTest, SighupReadsTheTokenFileAgainAndABadFileKeepsTheOldToken) {
  TempDir dir;
  std::ofstream(dir / "baseline.json") << daemonTestPolicy().dump();
  DaemonProcess::Options o;
  o.extraArgs = {"--policy", dir / "baseline.json"};
  DaemonProcess d(dir, o);
  HttpTestClient c(d.socketPath());
  const Headers oldAuth = d.authHeaders(), newAuth = {{"Authorization", "Bearer rotated-token-abcdef0123456789"}};
  auto created = c.request("POST", "/v1/sandboxes", json{{"policy", daemonTestPolicy()}}.dump(), oldAuth);
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string id = json::parse(created.body)["id"];
  auto logSays = [&](const std::string& what) {
    for (int i = 0; i < 200; ++i) {
      if (d.log().find(what) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };

  // Rewritten in place, then SIGHUP.
  std::ofstream(d.tokenFile(), std::ios::trunc) << "rotated-token-abcdef0123456789\n";
  EXPECT_EQ(c.request("GET", "/v1/sandboxes", "", oldAuth).status, 200) << "read only on SIGHUP";
  ASSERT_EQ(::kill(d.pid(), SIGHUP), 0);
  EXPECT_TRUE(eventuallyStatus(c, newAuth, 200)) << d.log();
  auto refused = c.request("GET", "/v1/sandboxes", "", oldAuth);
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(json::parse(refused.body)["code"], "unauthorized") << refused.body;
  EXPECT_TRUE(logSays(R"("event":"token_reloaded"})")) << d.log();
  // The sandbox made before the rotation still runs processes.
  auto ran = c.request("POST", "/v1/sandboxes/" + id + "/processes/run", R"({"argv":["/bin/echo","after"]})", newAuth);
  ASSERT_EQ(ran.status, 200) << ran.body;
  EXPECT_EQ(json::parse(ran.body)["stdout"], "after\n") << ran.body;

  // A file others can read is refused: the token stays the rotated one, and the log says why.
  std::ofstream(d.tokenFile(), std::ios::trunc) << "third-token-abcdef0123456789\n";
  ASSERT_EQ(::chmod(d.tokenFile().c_str(), 0644), 0);
  ASSERT_EQ(::kill(d.pid(), SIGHUP), 0);
  ASSERT_TRUE(logSays("token_reload_failed")) << d.log();
  EXPECT_NE(d.log().find("chmod 600 it; the previous token stays"), std::string::npos) << d.log();
  EXPECT_EQ(c.request("GET", "/v1/sandboxes", "", newAuth).status, 200);
  const Headers thirdAuth = {{"Authorization", "Bearer third-token-abcdef0123456789"}};
  EXPECT_EQ(c.request("GET", "/v1/sandboxes", "", thirdAuth).status, 401);

  // Renamed over the old file: the new token is served, and the log warns
  // that the sandboxes admitted the old file (their processes are refused as
  // drift, naming it, which the rename itself caused).
  const std::string next = dir / "token.next";
  std::ofstream(next) << "fourth-token-abcdef0123456789\n";
  ASSERT_EQ(::chmod(next.c_str(), 0600), 0);
  ASSERT_EQ(::rename(next.c_str(), d.tokenFile().c_str()), 0);
  ASSERT_EQ(::kill(d.pid(), SIGHUP), 0);
  const Headers fourthAuth = {{"Authorization", "Bearer fourth-token-abcdef0123456789"}};
  EXPECT_TRUE(eventuallyStatus(c, fourthAuth, 200)) << d.log();
  EXPECT_TRUE(logSays("rotate the token by rewriting the file in place")) << d.log();
  auto drift = c.request("POST", "/v1/sandboxes/" + id + "/processes/run", R"({"argv":["/bin/true"]})", fourthAuth);
  EXPECT_EQ(json::parse(drift.body)["code"], "E_SANDBOX_POLICY_DRIFT") << drift.body;
  EXPECT_EQ(d.stop(), 0) << "SIGHUP never stops the daemon";
}

// What every daemon test relies on for a clean host: a test binary killed
// (a ctest timeout, a crash) takes the daemon it started with it.
TEST(StockadedTest, ADaemonDiesWithTheTestProcessThatStartedIt) {
  TempDir dir;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t test = ::fork();
  if (test == 0) {
    ::close(fds[0]);
    try {
      DaemonProcess d(dir);
      pid_t daemon = d.pid();
      (void)!::write(fds[1], &daemon, sizeof daemon);
      ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(fds[1]);
  pid_t daemon = 0;
  ASSERT_EQ(::read(fds[0], &daemon, sizeof daemon), static_cast<ssize_t>(sizeof daemon));
  ::close(fds[0]);
  ASSERT_EQ(::kill(test, SIGKILL), 0);
  ::waitpid(test, nullptr, 0);
  // Gone, or a zombie its new parent has yet to reap.
  auto gone = [&] {
    std::ifstream stat("/proc/" + std::to_string(daemon) + "/stat");
    std::string pid, comm, state;
    return !(stat >> pid >> comm >> state) || state == "Z";
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!gone() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(gone()) << "stockaded " << daemon << " outlived the test process that started it";
  if (!gone()) ::kill(daemon, SIGKILL);
}

}  // namespace
}  // namespace stockade::testing
