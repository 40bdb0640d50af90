// Sandboxes over HTTP on the real stockaded (shared/API.md, "Sandboxes"),
// their rows in the ledger across restarts and crashes, and the recovery of
// process groups a crashed daemon left running.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "src/ledger/ledger.h"
#include "tests/support/daemon_policy.h"
#include "tests/support/daemon_process.h"
#include "tests/support/subprocess.h"
#include "tests/support/orphan_group.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {
namespace {

using nlohmann::json;

json policy(json allowWrite = json::array({"."})) { return daemonTestPolicy(std::move(allowWrite)); }

// The daemon's baseline for these tests: the policy above.
DaemonProcess::Options withBaseline(const TempDir& dir, std::vector<std::string> extra = {}) {
  std::ofstream(dir / "baseline.json") << policy().dump();
  DaemonProcess::Options o;
  o.extraArgs = {"--policy", dir / "baseline.json"};
  o.extraArgs.insert(o.extraArgs.end(), extra.begin(), extra.end());
  return o;
}

json body(const HttpReply& r) { return json::parse(r.body); }

std::string createSandbox(HttpTestClient& c, json p = policy()) {
  auto r = c.request("POST", "/v1/sandboxes", json{{"policy", std::move(p)}}.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return body(r)["id"];
}

TEST(StockadedSandboxTest, AMissingOrWrongTokenIs401AndCreatesNothing) {
  TempDir dir;
  DaemonProcess d(dir, withBaseline(dir));
  HttpTestClient anon(d.socketPath());
  std::string create = json{{"policy", policy()}}.dump();
  EXPECT_EQ(anon.request("POST", "/v1/sandboxes", create).status, 401);
  EXPECT_EQ(anon.request("POST", "/v1/sandboxes", create, {{"Authorization", "Bearer not-the-token-xxxxxxxx"}}).status,
            401);
  EXPECT_EQ(anon.request("GET", "/v1/sandboxes").status, 401);
  auto c = d.client();
  EXPECT_EQ(body(c.request("GET", "/v1/sandboxes"))["items"].size(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(d.stateDir() + "/workspaces"));
}

TEST(StockadedSandboxTest, ASandboxIsCreatedListedNarrowedAndClosed) {
  TempDir dir;
  DaemonProcess d(dir, withBaseline(dir));
  auto c = d.client();
  auto r = c.request("POST", "/v1/sandboxes", json{{"policy", policy()}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json created = body(r);
  std::string id = created["id"];
  EXPECT_TRUE(id.starts_with("sb_")) << id;
  EXPECT_EQ(id.size(), 35u) << "128 random bits";
  EXPECT_TRUE(created["epoch"].is_string());
  std::string workspace = created["workspace"];
  EXPECT_TRUE(std::filesystem::is_directory(workspace));
  // "." resolved against the sandbox's own workspace.
  EXPECT_EQ(created["effectivePolicy"]["filesystem"]["allowWrite"], json::array({workspace}));

  json items = body(c.request("GET", "/v1/sandboxes"))["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["id"], id);
  EXPECT_EQ(items[0]["state"], "active");
  EXPECT_TRUE(items[0]["createdAt"].is_string());

  json got = body(c.request("GET", "/v1/sandboxes/" + id));
  EXPECT_EQ(got["epoch"], created["epoch"]);
  EXPECT_EQ(got["effectivePolicy"], created["effectivePolicy"]);

  r = c.request("POST", "/v1/sandboxes/" + id + "/narrow", json{{"policy", policy(json::array())}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body(r)["effectivePolicy"]["filesystem"]["allowWrite"], json::array());
  r = c.request("POST", "/v1/sandboxes/" + id + "/narrow", json{{"policy", policy()}}.dump());
  EXPECT_EQ(r.status, 422) << "narrow never widens back";
  EXPECT_EQ(body(r)["code"], "E_SANDBOX_POLICY_CONFLICT");
  EXPECT_NE(body(r)["message"].get<std::string>().find("allowWrite"), std::string::npos);

  r = c.request("DELETE", "/v1/sandboxes/" + id);
  EXPECT_EQ(r.status, 204);
  EXPECT_FALSE(std::filesystem::exists(workspace)) << "the workspace the daemon created goes with it";
  EXPECT_EQ(body(c.request("GET", "/v1/sandboxes"))["items"].size(), 0u);
  EXPECT_EQ(c.request("DELETE", "/v1/sandboxes/" + id).status, 204) << "closing twice is fine";
}

TEST(StockadedSandboxTest, AClosedSandboxsEpochIsStale) {
  TempDir dir;
  DaemonProcess d(dir, withBaseline(dir));
  auto c = d.client();
  std::string id = createSandbox(c);
  ASSERT_EQ(c.request("DELETE", "/v1/sandboxes/" + id).status, 204);
  for (auto [method, path, payload] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"GET", "/v1/sandboxes/" + id, ""},
           {"POST", "/v1/sandboxes/" + id + "/narrow", json{{"policy", policy()}}.dump()},
           {"POST", "/v1/sandboxes/" + id + "/terminate", R"({"processKey":"k"})"}}) {
    auto r = c.request(method, path, payload);
    EXPECT_EQ(r.status, 409) << path;
    EXPECT_EQ(body(r)["code"], "stale_epoch") << path;
  }
  auto r = c.request("GET", "/v1/sandboxes/sb_00000000000000000000000000000000");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(body(r)["code"], "not_found");
}

TEST(StockadedSandboxTest, APolicyWiderThanTheBaselineIs422NamingTheEntry) {
  TempDir dir;
  DaemonProcess d(dir, withBaseline(dir));
  auto c = d.client();
  // Wider than the baseline, and not a system tree (those are refused before admission).
  auto r = c.request("POST", "/v1/sandboxes", json{{"policy", policy(json::array({"/srv/data"}))}}.dump());
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(body(r)["code"], "E_SANDBOX_POLICY_CONFLICT");
  std::string m = body(r)["message"];
  EXPECT_NE(m.find("filesystem.allowWrite"), std::string::npos) << m;
  EXPECT_NE(m.find("/srv/data"), std::string::npos) << m;
  json wider = policy();
  wider["filesystem"]["denyRead"] = json::array({"~/.ssh"});  // drops /etc/shadow
  r = c.request("POST", "/v1/sandboxes", json{{"policy", wider}}.dump());
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(body(r)["message"].get<std::string>().find("/etc/shadow"), std::string::npos) << r.body;
  wider = policy();
  wider["network"]["allowedDomains"] = json::array({"example.com"});
  r = c.request("POST", "/v1/sandboxes", json{{"policy", wider}}.dump());
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(body(r)["message"].get<std::string>().find("example.com"), std::string::npos) << r.body;
  EXPECT_EQ(body(c.request("GET", "/v1/sandboxes"))["items"].size(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(d.stateDir() + "/workspaces")) << "a refused sandbox leaves no workspace";
}

TEST(StockadedSandboxTest, NarrowingOneSandboxNeverChangesAnother) {
  TempDir dir;
  DaemonProcess d(dir, withBaseline(dir));
  auto c = d.client();
  std::string a = createSandbox(c), b = createSandbox(c);
  json before = body(c.request("GET", "/v1/sandboxes/" + b))["effectivePolicy"];
  json narrower = policy(json::array());
  narrower["env"]["allow"] = json::array({"PATH"});
  ASSERT_EQ(c.request("POST", "/v1/sandboxes/" + a + "/narrow", json{{"policy", narrower}}.dump()).status, 200);
  EXPECT_EQ(body(c.request("GET", "/v1/sandboxes/" + b))["effectivePolicy"], before);
  EXPECT_EQ(body(c.request("GET", "/v1/sandboxes/" + a))["effectivePolicy"]["env"]["allow"], json::array({"PATH"}));
  EXPECT_NE(body(c.request("GET", "/v1/sandboxes/" + a))["epoch"], body(c.request("GET", "/v1/sandboxes/" + b))["epoch"]);
}

TEST(StockadedSandboxTest, EveryBadBodyIs400NamingTheField) {
  TempDir dir;
  DaemonProcess d(dir, withBaseline(dir));
  auto c = d.client();
  struct Case {
    std::string path, body, code, field;
  };
  std::vector<Case> cases = {
      {"/v1/sandboxes", "{", "invalid_argument", "body:"},
      {"/v1/sandboxes", "[1]", "invalid_argument", "body:"},
      {"/v1/sandboxes", "", "invalid_argument", "body:"},
      {"/v1/sandboxes", R"({"policy":{},"policy":{}})", "invalid_argument", "body:"},
      {"/v1/sandboxes", R"({"policy":{},"color":"red"})", "invalid_argument", "color:"},
      {"/v1/sandboxes", R"({"policy":"strict"})", "invalid_argument", "policy:"},
      {"/v1/sandboxes", R"({"policy":{},"workspace":7})", "invalid_argument", "workspace:"},
      {"/v1/sandboxes", R"({"policy":{},"workspace":"relative/dir"})", "invalid_argument", "workspace:"},
      {"/v1/sandboxes", R"({"policy":{"env":{"allow":["A-B"]}}})", "E_SANDBOX_INVALID_POLICY", "policy.env.allow[0]:"},
      {"/v1/sandboxes", R"({"policy":{"network":{"allowedDomains":["*"]}}})", "E_SANDBOX_INVALID_POLICY",
       "policy.network.allowedDomains[0]:"},
      {"/v1/sandboxes", R"({"policy":{"filesystem":{"allowWrite":"."}}})", "E_SANDBOX_INVALID_POLICY",
       "policy.filesystem.allowWrite:"},
  };
  std::string id = createSandbox(c);
  cases.push_back({"/v1/sandboxes/" + id + "/terminate", "{}", "invalid_argument", "processKey:"});
  cases.push_back({"/v1/sandboxes/" + id + "/terminate", R"({"processKey":""})", "invalid_argument", "processKey:"});
  cases.push_back({"/v1/sandboxes/" + id + "/terminate", R"({"processKey":"k","signal":"KILL"})", "invalid_argument",
                   "signal:"});
  cases.push_back({"/v1/sandboxes/" + id + "/narrow", R"({"policy":null})", "invalid_argument", "policy:"});
  for (const auto& k : cases) {
    auto r = c.request("POST", k.path, k.body);
    EXPECT_EQ(r.status, 400) << k.body << " -> " << r.body;
    json j = body(r);
    EXPECT_EQ(j["code"], k.code) << k.body;
    EXPECT_TRUE(j["message"].get<std::string>().starts_with(k.field)) << k.body << " -> " << j["message"];
  }
  auto r = c.request("POST", "/v1/sandboxes", json{{"policy", policy()}, {"workspace", dir / "missing"}}.dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(body(r)["code"], "invalid_path");
  EXPECT_EQ(body(c.request("GET", "/v1/sandboxes"))["items"].size(), 1u);
}

// A workspace that is a system directory makes "." writable there: refused,
// and the message speaks the API's words (the "workspace" field), not the
// CLI's (--cwd) -- it once said "pass --cwd" to an HTTP client.
TEST(StockadedSandboxTest, ASystemDirectoryAsTheWorkspaceIsRefusedNamingTheWorkspaceField) {
  TempDir dir;
  std::filesystem::create_directories(dir / "project");
  std::ofstream(dir / "wide.json") << policy(json::array({".", dir / "project"})).dump();
  DaemonProcess::Options o;
  o.extraArgs = {"--policy", dir / "wide.json"};
  DaemonProcess d(dir, o);
  auto c = d.client();
  auto allowed = c.request("POST", "/v1/sandboxes", json{{"policy", policy()}, {"workspace", dir / "project"}}.dump());
  ASSERT_EQ(allowed.status, 200) << allowed.body;
  auto r = c.request("POST", "/v1/sandboxes", json{{"policy", policy()}, {"workspace", "/etc"}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  const std::string message = body(r).value("message", "");
  EXPECT_EQ(body(r)["code"], "E_SANDBOX_INVALID_POLICY") << r.body;
  EXPECT_NE(message.find("the system directory \"/etc\""), std::string::npos) << message;
  EXPECT_NE(message.find("the sandbox's \"workspace\""), std::string::npos) << message;
  EXPECT_EQ(message.find("--"), std::string::npos) << "a CLI flag in an API error: " << message;
  EXPECT_EQ(body(c.request("GET", "/v1/sandboxes"))["items"].size(), 1u);
}

TEST(StockadedSandboxTest, AnOversizedBodyIs413AndTheLimitIsAFlag) {
  TempDir dir;
  DaemonProcess d(dir, withBaseline(dir, {"--max-body-bytes", "4096"}));
  auto c = d.client();
  json big = policy();
  for (int i = 0; i < 400; ++i) big["filesystem"]["denyRead"].push_back("/nonexistent/" + std::to_string(i));
  auto r = c.request("POST", "/v1/sandboxes", json{{"policy", big}}.dump());
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(body(r)["code"], "too_large");
  EXPECT_NE(body(r)["message"].get<std::string>().find("--max-body-bytes"), std::string::npos);
}

TEST(StockadedSandboxTest, AGivenWorkspaceIsUsedAndKeptAtClose) {
  TempDir dir;
  // The baseline allows writing under dir/work.
  std::string work = dir.dir("work/a");
  DaemonProcess d(dir, withBaseline(dir));
  auto c = d.client();
  auto r = c.request("POST", "/v1/sandboxes", json{{"policy", policy()}, {"workspace", work}}.dump());
  EXPECT_EQ(r.status, 422) << "the baseline's \".\" is the workspaces root, not dir/work";
  std::ofstream(dir / "wide.json") << policy(json::array({".", dir / "work"})).dump();
  d.stop();
  DaemonProcess::Options o;
  o.extraArgs = {"--policy", dir / "wide.json"};
  DaemonProcess d2(dir, o);
  auto c2 = d2.client();
  r = c2.request("POST", "/v1/sandboxes", json{{"policy", policy()}, {"workspace", work}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  std::string id = body(r)["id"];
  EXPECT_EQ(body(r)["workspace"], work);
  EXPECT_EQ(body(r)["effectivePolicy"]["filesystem"]["allowWrite"], json::array({work}));
  ASSERT_EQ(c2.request("DELETE", "/v1/sandboxes/" + id).status, 204);
  EXPECT_TRUE(std::filesystem::is_directory(work)) << "a workspace the caller gave is never removed";
}

TEST(StockadedSandboxTest, SandboxesSurviveARestartAndACrash) {
  TempDir dir;
  std::vector<std::string> ids;
  std::string closed;
  {
    DaemonProcess d(dir, withBaseline(dir));
    auto c = d.client();
    ids = {createSandbox(c), createSandbox(c)};
    closed = createSandbox(c);
    ASSERT_EQ(c.request("DELETE", "/v1/sandboxes/" + closed).status, 204);
    EXPECT_EQ(d.stop(), 0);
  }
  json epochs;
  {
    DaemonProcess d(dir, withBaseline(dir));
    auto c = d.client();
    json items = body(c.request("GET", "/v1/sandboxes"))["items"];
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0]["id"], ids[0]);
    EXPECT_EQ(items[1]["id"], ids[1]);
    EXPECT_EQ(c.request("GET", "/v1/sandboxes/" + closed).status, 409);
    epochs = body(c.request("GET", "/v1/sandboxes/" + ids[0]))["epoch"];
    ids.push_back(createSandbox(c));
    d.kill9();
  }
  DaemonProcess d(dir, withBaseline(dir));
  auto c = d.client();
  json items = body(c.request("GET", "/v1/sandboxes"))["items"];
  ASSERT_EQ(items.size(), 3u) << "the sandbox created just before kill -9 is there";
  EXPECT_EQ(items[2]["id"], ids[2]);
  json got = body(c.request("GET", "/v1/sandboxes/" + ids[0]));
  EXPECT_EQ(got["epoch"], epochs);
  EXPECT_EQ(got["state"], "active");
  EXPECT_TRUE(got["effectivePolicy"].is_object());
  EXPECT_EQ(c.request("POST", "/v1/sandboxes/" + ids[0] + "/narrow", json{{"policy", policy(json::array())}}.dump()).status,
            200);
}

TEST(StockadedSandboxTest, TheSandboxLimitAnswers503NamingTheFlag) {
  TempDir dir;
  DaemonProcess d(dir, withBaseline(dir, {"--max-sandboxes", "2"}));
  auto c = d.client();
  std::string a = createSandbox(c);
  createSandbox(c);
  auto r = c.request("POST", "/v1/sandboxes", json{{"policy", policy()}}.dump());
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(body(r)["code"], "unavailable");
  EXPECT_NE(body(r)["message"].get<std::string>().find("--max-sandboxes"), std::string::npos);
  ASSERT_EQ(c.request("DELETE", "/v1/sandboxes/" + a).status, 204);
  createSandbox(c);
}

TEST(StockadedSandboxTest, TwoDaemonsNeverShareAStateDir) {
  TempDir dir;
  DaemonProcess d(dir, withBaseline(dir));
  auto r = runProcess({stockadedBinary(), "--listen", "unix:" + (dir / "other.sock"), "--state-dir", d.stateDir()});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("in use by another stockaded"), std::string::npos) << r.err;
}

TEST(StockadedSandboxTest, ACloseThatCannotReleaseIsKeptAndRetried) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs inside the workspace (what makes removal fail)";
  TempDir dir;
  DaemonProcess d(dir, withBaseline(dir, {"--gc-interval-ms", "100"}));
  auto c = d.client();
  auto r = c.request("POST", "/v1/sandboxes", json{{"policy", policy()}}.dump());
  std::string id = body(r)["id"], workspace = body(r)["workspace"];
  std::string busy = workspace + "/mnt";
  ASSERT_EQ(::mkdir(busy.c_str(), 0700), 0);
  ASSERT_EQ(::mount("tmpfs", busy.c_str(), "tmpfs", 0, "size=1m"), 0) << std::strerror(errno);
  r = c.request("DELETE", "/v1/sandboxes/" + id);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(body(r)["code"], "release_failed");
  json got = body(c.request("GET", "/v1/sandboxes/" + id));
  EXPECT_EQ(got["state"], "release_failed");
  EXPECT_NE(got["releaseError"].get<std::string>().find("workspace"), std::string::npos) << got;
  EXPECT_EQ(body(c.request("GET", "/v1/sandboxes"))["items"][0]["state"], "release_failed") << "never dropped";
  EXPECT_EQ(c.request("POST", "/v1/sandboxes/" + id + "/narrow", json{{"policy", policy()}}.dump()).status, 409);
  ASSERT_EQ(::umount(busy.c_str()), 0);
  bool released = false;
  for (int i = 0; i < 200 && !released; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    released = c.request("GET", "/v1/sandboxes/" + id).status == 409;
  }
  EXPECT_TRUE(released) << "the collection pass released it";
  EXPECT_FALSE(std::filesystem::exists(workspace));
  // The pass logs after it has released the sandbox: the line may follow the 409.
  bool logged = false;
  for (int i = 0; i < 200 && !logged; ++i) {
    logged = d.log().find("\"event\":\"collected\"") != std::string::npos;
    if (!logged) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(logged) << d.log();
}


TEST(StockadedSandboxTest, AfterKill9TheRecordedGroupsAreKilledReportedLostAndTerminateAnswersForEachKey) {
  TempDir dir;
  std::string id;
  std::vector<platform::ProcessIdentity> groups;
  {
    DaemonProcess d(dir, withBaseline(dir));
    auto c = d.client();
    id = createSandbox(c);
    auto opened = ledger::Ledger::open(d.stateDir() + "/ledger.db");
    ASSERT_TRUE(std::holds_alternative<std::unique_ptr<ledger::Ledger>>(opened)) << std::get<std::string>(opened);
    auto& l = *std::get<std::unique_ptr<ledger::Ledger>>(opened);
    for (int i = 0; i < 20; ++i) {
      std::string key = "job-" + std::to_string(i);
      ASSERT_TRUE(l.beginStart(key, id, "p_" + std::to_string(i)));
      auto identity = platform::identifyProcess(spawnOrphanGroup());
      ASSERT_TRUE(identity);
      l.markStarted(key, "", *identity, "");
      groups.push_back(*identity);
    }
    d.kill9();
  }
  for (const auto& g : groups) ASSERT_TRUE(platform::identifyProcess(g.pid)) << "alive after the crash";
  DaemonProcess d(dir, withBaseline(dir));
  for (const auto& g : groups) {
    auto now = platform::identifyProcess(g.pid);
    EXPECT_FALSE(now && now->startTime == g.startTime) << "group " << g.pid << " outlived the restart";
  }
  auto c = d.client();
  for (int i = 0; i < 20; ++i) {
    auto r = c.request("POST", "/v1/sandboxes/" + id + "/terminate",
                       json{{"processKey", "job-" + std::to_string(i)}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(body(r)["result"], "terminated");
  }
  auto r = c.request("POST", "/v1/sandboxes/" + id + "/terminate", R"({"processKey":"never-started"})");
  EXPECT_EQ(body(r)["result"], "unknown");
  EXPECT_NE(d.log().find("\"killed\":20"), std::string::npos) << d.log();
  auto opened = ledger::Ledger::open(d.stateDir() + "/ledger.db");
  auto& l = *std::get<std::unique_ptr<ledger::Ledger>>(opened);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(l.process("job-" + std::to_string(i))->state, ledger::ProcessState::kLost);
}

}  // namespace
}  // namespace stockade::testing
