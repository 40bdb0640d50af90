// POST /v1/sandboxes/{id}/code on the real stockaded (seed 002's runCode):
// a Python kernel of the sandbox's process service that keeps its state
// across calls; results, logs and errors; timeouts that interrupt and keep
// the state; a dead kernel reported and replaced; calls serialized; and the
// sandbox's policy holding for code exactly as for its processes. Real
// daemon on a temporary unix socket, real HTTP client, real python3.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "proxy_test_support.h"
#include "tests/support/daemon_policy.h"
#include "tests/support/daemon_process.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {
namespace {

using nlohmann::json;

json body(const HttpReply& r) { return json::parse(r.body, nullptr, false); }

// Joins a log array ({"stdout": ["a", "b"]}) into one string.
std::string joined(const json& chunks) {
  std::string out;
  for (const auto& c : chunks) out += c.get<std::string>();
  return out;
}

class CodeTest : public ::testing::Test {
 protected:
  void SetUp() override { start(daemonTestPolicy(), {}, {}); }

  void start(json baseline, std::vector<std::string> extraArgs, std::vector<std::string> extraEnv) {
    c.reset();
    daemon.reset();
    std::ofstream(dir / "baseline.json") << baseline.dump();
    DaemonProcess::Options o;
    o.extraArgs = {"--policy", dir / "baseline.json"};
    o.extraArgs.insert(o.extraArgs.end(), extraArgs.begin(), extraArgs.end());
    o.extraEnv = std::move(extraEnv);
    daemon = std::make_unique<DaemonProcess>(dir, o);
    c = std::make_unique<HttpTestClient>(daemon->client());
  }
  std::string createSandbox(json policy = daemonTestPolicy()) {
    auto r = c->request("POST", "/v1/sandboxes", json{{"policy", std::move(policy)}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? body(r)["id"].get<std::string>() : "";
  }
  HttpReply post(const std::string& sandbox, const json& request, HttpTestClient* client = nullptr) {
    return (client ? *client : *c).request("POST", "/v1/sandboxes/" + sandbox + "/code", request.dump());
  }
  // Runs code and returns the Execution (200 expected).
  json code(const std::string& sandbox, const std::string& source, std::optional<double> timeout = std::nullopt) {
    json request{{"code", source}};
    if (timeout) request["timeout"] = *timeout;
    auto r = post(sandbox, request);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? body(r) : json::object();
  }
  // The first call of a test: skips the test when this host's python3
  // cannot import IPython (scripts/bootstrap installs python3-ipython).
  json first(const std::string& sandbox, const std::string& source) {
    auto r = post(sandbox, {{"code", source}});
    if (r.status == 503 && r.body.find("IPython") != std::string::npos) {
      skipped = "python3 cannot import IPython here (scripts/bootstrap installs python3-ipython): " + r.body;
      return json::object();
    }
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? body(r) : json::object();
  }

  TempDir dir;
  std::unique_ptr<DaemonProcess> daemon;
  std::unique_ptr<HttpTestClient> c;
  std::string skipped;
};

#define FIRST_OR_SKIP(var, sandbox, source) \
  json var = first(sandbox, source);        \
  if (!skipped.empty()) GTEST_SKIP() << skipped

TEST_F(CodeTest, VariablesImportsAndFunctionsAreKeptAcrossCalls) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(a, id, "import math\nx = 41\ndef twice(v):\n    return 2 * v");
  EXPECT_TRUE(a["error"].is_null()) << a;
  EXPECT_TRUE(a["results"].empty()) << "a cell ending in a statement has no result: " << a;
  EXPECT_EQ(a["kernel"]["new"], true);
  EXPECT_EQ(a["executionCount"], 1);

  json b = code(id, "twice(x + 1) + int(math.sqrt(16))");
  EXPECT_TRUE(b["error"].is_null()) << b;
  ASSERT_EQ(b["results"].size(), 1u) << b;
  EXPECT_EQ(b["results"][0]["text"], "88");
  EXPECT_EQ(b["results"][0]["isMainResult"], true);
  EXPECT_EQ(b["kernel"]["new"], false);
  EXPECT_EQ(b["kernel"]["processId"], a["kernel"]["processId"]) << "one kernel serves the sandbox";
  EXPECT_EQ(b["executionCount"], 2);

  // The kernel is a process of the sandbox, listed with kind "code".
  auto listed = c->request("GET", "/v1/sandboxes/" + id + "/processes?kind=code");
  ASSERT_EQ(listed.status, 200) << listed.body;
  ASSERT_EQ(body(listed)["items"].size(), 1u) << listed.body;
  EXPECT_EQ(body(listed)["items"][0]["id"], a["kernel"]["processId"]);
  EXPECT_EQ(body(listed)["items"][0]["state"], "running");
}

TEST_F(CodeTest, TwoSandboxesNeverShareState) {
  std::string one = createSandbox(), two = createSandbox();
  FIRST_OR_SKIP(a, one, "secret = 'only in one'");
  json b = code(two, "secret");
  ASSERT_TRUE(b["error"].is_object()) << b;
  EXPECT_EQ(b["error"]["name"], "NameError");
  EXPECT_NE(b["kernel"]["processId"], a["kernel"]["processId"]);
  json again = code(one, "secret");
  ASSERT_EQ(again["results"].size(), 1u) << again;
  EXPECT_EQ(again["results"][0]["text"], "'only in one'");
}

TEST_F(CodeTest, AnExceptionFillsErrorAndKeepsTheLogsSoFar) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(r, id, "print('before')\ndef inner():\n    return 1 / 0\ninner()\nprint('never')");
  ASSERT_TRUE(r["error"].is_object()) << r;
  EXPECT_EQ(r["error"]["name"], "ZeroDivisionError");
  EXPECT_EQ(r["error"]["value"], "division by zero");
  const std::string tb = r["error"]["traceback"];
  EXPECT_NE(tb.find("ZeroDivisionError"), std::string::npos) << tb;
  EXPECT_NE(tb.find("inner()"), std::string::npos) << "the traceback shows the calling line: " << tb;
  EXPECT_EQ(joined(r["logs"]["stdout"]), "before\n");
  EXPECT_TRUE(r["results"].empty());
  // A syntax error is an error too, and the kernel goes on.
  json s = code(id, "def broken(:");
  ASSERT_TRUE(s["error"].is_object()) << s;
  EXPECT_EQ(s["error"]["name"], "SyntaxError");
  json ok = code(id, "1 + 1");
  EXPECT_EQ(ok["results"][0]["text"], "2") << ok;
}

TEST_F(CodeTest, StdoutAndStderrGoToLogsAndUserOutputNeverPassesForAFrame) {
  std::string id = createSandbox();
  // Python-level writes, a subprocess writing to the descriptors themselves,
  // and output shaped like the kernel's own frames (the tag's nonce unknown).
  FIRST_OR_SKIP(r, id,
                "import sys, os, subprocess\n"
                "print('to stdout')\n"
                "print('to stderr', file=sys.stderr)\n"
                "subprocess.run(['/bin/sh', '-c', 'echo sub-out; echo sub-err >&2'])\n"
                "print('\\x1eSTK0000 {\"type\": \"done\", \"id\": 1, \"result\": {\"text/plain\": \"forged\"}}\\x1e')\n"
                "os.write(1, b'\\x1eSTK {\"type\": \"fatal\"}\\x1e\\n')\n"
                "input_value = sys.stdin.read()\n"
                "'real'");
  EXPECT_TRUE(r["error"].is_null()) << r;
  const std::string out = joined(r["logs"]["stdout"]), err = joined(r["logs"]["stderr"]);
  EXPECT_NE(out.find("to stdout\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sub-out\n"), std::string::npos) << out;
  EXPECT_NE(out.find("forged"), std::string::npos) << "the forged frame is the user's output: " << out;
  EXPECT_NE(out.find("\"fatal\""), std::string::npos) << out;
  EXPECT_NE(err.find("to stderr\n"), std::string::npos) << err;
  EXPECT_NE(err.find("sub-err\n"), std::string::npos) << err;
  ASSERT_EQ(r["results"].size(), 1u) << r;
  EXPECT_EQ(r["results"][0]["text"], "'real'");
  // The user's stdin is empty: the protocol's requests never reach it.
  json in = code(id, "input_value");
  EXPECT_EQ(in["results"][0]["text"], "''") << in;
}

TEST_F(CodeTest, RichReprsAreResultsAndDisplayAddsOthers) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(r, id,
                "from IPython.display import HTML, display\n"
                "class Picture:\n"
                "    def _repr_png_(self):\n"
                "        return b'\\x89PNG\\r\\n\\x1a\\nnot-really'\n"
                "class Data:\n"
                "    def _repr_json_(self):\n"
                "        return {'a': [1, 2]}\n"
                "display(Picture())\n"
                "display(Data())\n"
                "HTML('<b>bold</b>')");
  EXPECT_TRUE(r["error"].is_null()) << r;
  ASSERT_EQ(r["results"].size(), 3u) << r;
  EXPECT_EQ(r["results"][0]["png"], "iVBORw0KGgpub3QtcmVhbGx5") << "image/png as base64: " << r["results"][0];
  EXPECT_EQ(r["results"][0]["isMainResult"], false);
  EXPECT_EQ(r["results"][1]["json"], json({{"a", {1, 2}}})) << r["results"][1];
  EXPECT_EQ(r["results"][2]["html"], "<b>bold</b>");
  EXPECT_TRUE(r["results"][2]["text"].is_string());
  EXPECT_EQ(r["results"][2]["isMainResult"], true);
  EXPECT_EQ(r["results"][2]["formats"], json({"html", "text"}));
  // A trailing semicolon suppresses the result, as in Jupyter.
  json quiet = code(id, "1 + 1;");
  EXPECT_TRUE(quiet["results"].empty()) << quiet;
}

TEST_F(CodeTest, ATimeoutInterruptsTheCellAndTheStateSurvives) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(a, id, "kept = 'still here'");
  json r = code(id, "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.05)", 1.0);
  ASSERT_TRUE(r["error"].is_object()) << r;
  EXPECT_EQ(r["error"]["name"], "TimeoutError");
  EXPECT_NE(r["error"]["value"].get<std::string>().find("1000 ms"), std::string::npos) << r;
  EXPECT_NE(r["error"]["traceback"].get<std::string>().find("KeyboardInterrupt"), std::string::npos) << r;
  EXPECT_NE(joined(r["logs"]["stdout"]).find("started"), std::string::npos) << r;
  json after = code(id, "kept");
  EXPECT_TRUE(after["error"].is_null()) << after;
  EXPECT_EQ(after["results"][0]["text"], "'still here'");
  EXPECT_EQ(after["kernel"]["processId"], a["kernel"]["processId"]) << "the same kernel: nothing restarted";
}

// A thread of the code's that prints all the while never holds the
// interrupt back: the cell still ends as TimeoutError, and its output came.
TEST_F(CodeTest, AnInterruptReachesTheCellWhileAThreadOfItsPrints) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(a, id, "import threading, time\nstop = False\n"
                       "def chatter():\n    while not stop:\n        print('tick', flush=True)\n        time.sleep(0.001)\n"
                       "t = threading.Thread(target=chatter, daemon=True)\nt.start()");
  json r = code(id, "while True:\n    pass", 1.0);
  ASSERT_TRUE(r["error"].is_object()) << r.dump().substr(0, 400);
  EXPECT_EQ(r["error"]["name"], "TimeoutError") << r["error"];
  EXPECT_NE(joined(r["logs"]["stdout"]).find("tick"), std::string::npos);
  json after = code(id, "stop = True\nt.join(5)\nt.is_alive()");
  EXPECT_EQ(after["results"][0]["text"], "False") << after;
  EXPECT_EQ(after["kernel"]["processId"], a["kernel"]["processId"]);
}

TEST_F(CodeTest, ACellThatIgnoresTheInterruptEndsTheKernelAndTheNextCallSaysTheStateWasLost) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(a, id, "kept = 1");
  json r = code(id,
                "import time\n"
                "while True:\n"
                "    try:\n"
                "        time.sleep(10)\n"
                "    except KeyboardInterrupt:\n"
                "        pass",
                0.5);
  ASSERT_TRUE(r["error"].is_object()) << r;
  EXPECT_EQ(r["error"]["name"], "KernelDied");
  EXPECT_NE(r["error"]["value"].get<std::string>().find("did not stop"), std::string::npos) << r;
  json next = code(id, "kept");
  EXPECT_EQ(next["kernel"]["new"], true) << next;
  EXPECT_TRUE(next["kernel"]["stateLost"].is_string()) << next;
  EXPECT_EQ(next["error"]["name"], "NameError") << next;
}

TEST_F(CodeTest, AKernelThatDiesIsReportedAndTheNextCallStartsAFreshOne) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(a, id, "kept = 1");
  json died = code(id, "import os\nprint('last words', flush=True)\nos._exit(7)");
  ASSERT_TRUE(died["error"].is_object()) << died;
  EXPECT_EQ(died["error"]["name"], "KernelDied");
  EXPECT_NE(died["error"]["value"].get<std::string>().find("exited with status 7"), std::string::npos) << died;
  EXPECT_NE(joined(died["logs"]["stdout"]).find("last words"), std::string::npos) << died;

  json fresh = code(id, "kept");
  EXPECT_EQ(fresh["kernel"]["new"], true);
  EXPECT_NE(fresh["kernel"]["processId"], a["kernel"]["processId"]);
  ASSERT_TRUE(fresh["kernel"]["stateLost"].is_string()) << fresh;
  EXPECT_NE(fresh["kernel"]["stateLost"].get<std::string>().find("status 7"), std::string::npos) << fresh;
  EXPECT_EQ(fresh["error"]["name"], "NameError");

  // Killed between calls (through the processes API): the next call says so.
  const std::string kernel = fresh["kernel"]["processId"];
  auto killed = c->request("POST", "/v1/sandboxes/" + id + "/processes/" + kernel + "/kill", R"({"signal":"KILL"})");
  ASSERT_EQ(killed.status, 204) << killed.body;
  auto waited = c->request("POST", "/v1/sandboxes/" + id + "/processes/" + kernel + "/wait", R"({"timeout":10000})");
  ASSERT_EQ(waited.status, 200) << waited.body;
  json third = code(id, "1");
  EXPECT_EQ(third["kernel"]["new"], true);
  ASSERT_TRUE(third["kernel"]["stateLost"].is_string()) << third;
  EXPECT_NE(third["kernel"]["stateLost"].get<std::string>().find("SIGKILL"), std::string::npos) << third;
  EXPECT_EQ(third["results"][0]["text"], "1");
}

// The driver shares its interpreter with the code, so code can find the
// frame tag and write frames of its own: a forged one nested 200,000 deep
// (the daemon serialises frames by recursion) ends the kernel, not the daemon.
TEST_F(CodeTest, AForgedFrameNestedTooDeepEndsTheKernelAndTheDaemonServesOn) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(a, id, "kept = 1");
  json forged = code(id,
                     "import gc, os\n"
                     "g = [o for o in gc.get_objects() if isinstance(o, dict) and '_tag' in o and '_out_fd' in o][0]\n"
                     "deep = b'[' * 200000 + b']' * 200000\n"
                     "os.write(g['_out_fd'], b'\\x1e' + g['_tag'] + b' {\"type\":\"display\",\"data\":{\"x\":' + "
                     "deep + b'}}\\x1e')\n"
                     "import time; time.sleep(30)");
  ASSERT_TRUE(forged["error"].is_object()) << forged;
  EXPECT_EQ(forged["error"]["name"], "KernelDied");
  EXPECT_NE(forged["error"]["value"].get<std::string>().find("nested deeper than 256 levels"), std::string::npos)
      << forged;
  EXPECT_EQ(c->request("GET", "/v1/health").status, 200) << "the daemon still serves";
  json fresh = code(id, "1 + 1");
  EXPECT_EQ(fresh["kernel"]["new"], true) << fresh;
  EXPECT_EQ(fresh["results"][0]["text"], "2") << fresh;
}

TEST_F(CodeTest, DeletingTheSandboxKillsItsKernel) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(a, id, "1");
  auto got = c->request("GET", "/v1/sandboxes/" + id + "/processes/" + a["kernel"]["processId"].get<std::string>());
  ASSERT_EQ(got.status, 200) << got.body;
  const pid_t pid = body(got)["pid"];
  ASSERT_EQ(::kill(pid, 0), 0) << "the kernel's sandbox runs";
  ASSERT_EQ(c->request("DELETE", "/v1/sandboxes/" + id).status, 204);
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = ::kill(pid, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "pid " << pid << " outlived its sandbox";
  auto r = post(id, {{"code", "1"}});
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(body(r)["code"], "stale_epoch");
}

TEST_F(CodeTest, CallsOnOneSandboxRunOneAfterAnother) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(a, id, "order = []");
  HttpTestClient other = daemon->client();
  std::thread slow([&] {
    auto r = post(id, {{"code", "import time\norder.append('slow-start')\ntime.sleep(1)\norder.append('slow-end')"}},
                  &other);
    EXPECT_EQ(r.status, 200) << r.body;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  json fast = code(id, "order.append('fast'); order");
  slow.join();
  ASSERT_EQ(fast["results"].size(), 1u) << fast;
  EXPECT_EQ(fast["results"][0]["text"], "['slow-start', 'slow-end', 'fast']") << "the second call waited for the first";
}

// Every rule of the sandbox's policy holds for its code exactly as for its
// processes: read-denied paths, a direct connection, the proxy's verdicts,
// the environment.
TEST_F(CodeTest, ThePolicyHoldsForCodeAsForProcesses) {
  proxy::testing::OriginServer origin;
  TempDir data;
  std::filesystem::create_directories(data / "secret");
  std::ofstream(data / "secret/key.txt") << "do not read";
  std::ofstream(data / "shadow.txt") << "do not read either";
  std::ofstream(data / "public.txt") << "fine to read";
  json baseline = daemonTestPolicy();
  baseline["network"]["allowedDomains"] = json::array({"origin.test", "other.test"});
  start(baseline, {"--resolve", "origin.test=127.0.0.1", "--resolve", "other.test=127.0.0.1"},
        {"STOCKADE_CODE_TEST_SECRET=hunter2"});
  json p = daemonTestPolicy();
  p["filesystem"]["denyRead"].push_back(data / "secret");
  p["filesystem"]["denyRead"].push_back(data / "shadow.txt");
  p["network"]["allowedDomains"] = json::array({"origin.test"});
  std::string id = createSandbox(p);
  const std::string port = std::to_string(origin.port());

  // As for any process of the sandbox, a read-denied directory is an empty
  // mask (its files are not there) and a read-denied file reads as nothing,
  // beside a readable neighbour.
  FIRST_OR_SKIP(fs, id,
                "import os\n"
                "def attempt(path):\n"
                "    try:\n"
                "        return open(path).read()\n"
                "    except OSError as e:\n"
                "        return type(e).__name__\n"
                "(attempt('" + (data / "public.txt") + "'), attempt('" + (data / "secret/key.txt") + "'), "
                "os.listdir('" + (data / "secret") + "'), attempt('" + (data / "shadow.txt") + "'))");
  EXPECT_TRUE(fs["error"].is_null()) << fs;
  EXPECT_EQ(fs["results"][0]["text"], "('fine to read', 'FileNotFoundError', [], '')") << fs;

  // Raised, not caught: the refusal is the call's error.
  json raised = code(id, "open('" + (data / "secret/key.txt") + "').read()");
  ASSERT_TRUE(raised["error"].is_object()) << raised;
  EXPECT_EQ(raised["error"]["name"], "FileNotFoundError");

  // A direct connection to a listener on the host's loopback fails; the
  // sandbox's proxy reaches its allowed name, and refuses another.
  json net = code(id,
                  "import socket, urllib.request, urllib.error\n"
                  "def direct():\n"
                  "    try:\n"
                  "        socket.create_connection(('127.0.0.1', " + port + "), timeout=5).close()\n"
                  "        return 'connected'\n"
                  "    except OSError as e:\n"
                  "        return 'refused'\n"
                  "def proxied(name):\n"
                  "    try:\n"
                  "        return urllib.request.urlopen('http://' + name + ':" + port + "/', timeout=10).status\n"
                  "    except urllib.error.HTTPError as e:\n"
                  "        return e.code\n"
                  "(direct(), proxied('origin.test'), proxied('other.test'))");
  EXPECT_TRUE(net["error"].is_null()) << net;
  EXPECT_EQ(net["results"][0]["text"], "('refused', 200, 403)") << net;

  // The daemon's environment does not reach the code: only env.allow names.
  json env = code(id, "import os\n(os.environ.get('STOCKADE_CODE_TEST_SECRET'), 'PATH' in os.environ)");
  EXPECT_EQ(env["results"][0]["text"], "(None, True)") << env;
}

TEST_F(CodeTest, OutputBeyondTheCallsBudgetIsDroppedAndSaidSoAndTheKernelGoesOn) {
  std::string id = createSandbox();
  FIRST_OR_SKIP(a, id, "kept = 1");
  // 12 MiB through print and a 40 MiB result: the call keeps 8 MiB of the
  // output, says it dropped the rest, and the oversized result is replaced
  // by a note; the kernel and its state survive.
  json r = code(id, "import sys\nsys.stdout.write('x' * (12 << 20))\nclass Big:\n"
                    "    def _repr_html_(self):\n        return 'y' * (40 << 20)\nBig()");
  EXPECT_TRUE(r["error"].is_null()) << r.dump().substr(0, 500);
  EXPECT_EQ(r["logsTruncated"], true);
  EXPECT_EQ(joined(r["logs"]["stdout"]).size(), std::size_t{8} << 20);
  ASSERT_EQ(r["results"].size(), 1u);
  EXPECT_NE(r["results"][0]["text"].get<std::string>().find("was dropped"), std::string::npos) << r["results"][0];
  json after = code(id, "kept");
  EXPECT_EQ(after["results"][0]["text"], "1") << after;
  EXPECT_EQ(after["kernel"]["processId"], a["kernel"]["processId"]);
}

TEST_F(CodeTest, ASandboxThatCannotReadIPythonIs503SayingSo) {
  json p = daemonTestPolicy();
  p["filesystem"]["denyRead"].push_back("/usr/lib/python3/dist-packages");
  std::string id = createSandbox(p);
  auto r = post(id, {{"code", "1"}});
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(body(r)["code"], "unavailable");
  EXPECT_NE(r.body.find("IPython is not importable"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("python3-ipython"), std::string::npos) << "the fix is named: " << r.body;
}

// A kernel over the sandbox's memory limit: where the memory cgroup enforces
// it the kernel is killed for it, the call says so and the next one starts a
// fresh kernel; where the limit could only be RLIMIT_AS (an unprivileged user
// without a delegated cgroup) the kernel is refused before it starts, as any
// process of the sandbox is (stockade does not run weaker than the rules);
// where RLIMIT_AS is what holds, the allocation fails as MemoryError and the
// kernel lives on. In every case the limit holds for code as for processes.
TEST_F(CodeTest, CodeOverTheSandboxsMemoryLimitIsStoppedByIt) {
  json p = daemonTestPolicy();
  p["limits"]["memoryBytes"] = 256u << 20;
  std::string id = createSandbox(p);
  auto started = post(id, {{"code", "kept = 1"}});
  if (started.status == 422) {
    EXPECT_EQ(body(started)["code"], "E_SANDBOX_SPAWN_FAILED") << started.body;
    EXPECT_NE(started.body.find("refusing to run weaker than the rules: limits.memoryBytes"), std::string::npos)
        << started.body;
    auto none = c->request("GET", "/v1/sandboxes/" + id + "/processes?kind=code&state=running");
    EXPECT_EQ(body(none)["items"].size(), 0u) << "no kernel runs without its limit: " << none.body;
    return;
  }
  FIRST_OR_SKIP(a, id, "kept = 1");
  json r = code(id, "big = b'x' * (1 << 30)\nlen(big)");
  ASSERT_TRUE(r["error"].is_object()) << "1 GiB under a 256 MiB limit: " << r.dump().substr(0, 400);
  const std::string name = r["error"]["name"];
  if (name == "KernelDied") {
    EXPECT_NE(r["error"]["value"].get<std::string>().find("limits.memoryBytes"), std::string::npos) << r;
    json next = code(id, "kept");
    EXPECT_EQ(next["kernel"]["new"], true) << next;
    EXPECT_NE(next["kernel"]["stateLost"].get<std::string>().find("limits.memoryBytes"), std::string::npos) << next;
  } else {
    EXPECT_EQ(name, "MemoryError") << r;
    json next = code(id, "kept");
    EXPECT_EQ(next["results"][0]["text"], "1") << "the kernel lives on: " << next;
  }
}

TEST_F(CodeTest, BadBodiesAre400NamingTheField) {
  std::string id = createSandbox();
  struct Case {
    std::string body;
    std::string field;  // the message starts with it
    std::string detail; // and holds this
  };
  const Case cases[] = {
      {R"({})", "code:", "required"},
      {R"({"code": 1})", "code:", "string"},
      {R"({"code": ""})", "code:", "empty"},
      {R"({"code": "  \n"})", "code:", "empty"},
      {R"({"code": "1", "language": "ruby"})", "language:", "\"ruby\" is not a language this daemon runs code in; supported: [\"python\"]"},
      {R"({"code": "1", "language": 3})", "language:", "string"},
      {R"({"code": "1", "timeout": "5"})", "timeout:", "number"},
      {R"({"code": "1", "timeout": 0})", "timeout:", "out of range"},
      {R"({"code": "1", "timeout": -1})", "timeout:", "out of range"},
      {R"({"code": "1", "timeout": 1e9})", "timeout:", "out of range"},
      {R"({"code": "1", "sandbox": "x"})", "sandbox:", "unknown"},
      {R"([1])", "body", "object"},
      {R"({"code": "1")", "body", ""},
      {"{\"code\": \"" + std::string((1u << 20) + 1, 'x') + "\"}", "code:", "at most 1048576"},
  };
  for (const auto& k : cases) {
    auto r = c->request("POST", "/v1/sandboxes/" + id + "/code", k.body);
    EXPECT_EQ(r.status, 400) << k.body.substr(0, 80) << " -> " << r.body.substr(0, 300);
    json j = body(r);
    ASSERT_TRUE(j.is_object()) << r.body.substr(0, 300);
    EXPECT_EQ(j["code"], "invalid_argument") << r.body.substr(0, 300);
    const std::string message = j.value("message", "");
    EXPECT_TRUE(message.starts_with(k.field)) << k.body.substr(0, 80) << " -> " << message.substr(0, 300);
    EXPECT_NE(message.find(k.detail), std::string::npos) << k.body.substr(0, 80) << " -> " << message.substr(0, 300);
  }
  // A query string is refused too, and an unknown sandbox is 404.
  EXPECT_EQ(c->request("POST", "/v1/sandboxes/" + id + "/code?x=1", R"({"code":"1"})").status, 400);
  auto unknown = c->request("POST", "/v1/sandboxes/sb_unknown/code", R"({"code":"1"})");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  // None of those started a kernel.
  auto listed = c->request("GET", "/v1/sandboxes/" + id + "/processes?kind=code");
  EXPECT_EQ(body(listed)["items"].size(), 0u) << listed.body;
}

}  // namespace
}  // namespace stockade::testing
