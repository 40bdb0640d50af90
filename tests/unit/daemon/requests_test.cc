#include "src/daemon/requests.h"

#include <gtest/gtest.h>

#include "src/daemon/base64.h"
#include "src/daemon/json_body.h"

namespace stockade::daemon {
namespace {

template <class T>
ApiError errorOf(const Decoded<T>& d) {
  EXPECT_TRUE(std::holds_alternative<ApiError>(d));
  return std::holds_alternative<ApiError>(d) ? std::get<ApiError>(d) : ApiError{};
}

// By value: the argument is usually a temporary.
template <class T>
T valueOf(Decoded<T> d) {
  if (auto* e = std::get_if<ApiError>(&d)) {
    ADD_FAILURE() << e->message;
    return T{};
  }
  return std::get<T>(std::move(d));
}

struct BadBody {
  const char* body;
  const char* field;  // the message starts with this field path
};

// Every 400 case of a process start, each naming the field.
const BadBody kBadStarts[] = {
    {"", "body"},
    {"{", "body"},
    {"[]", "body"},
    {"\"cmd\"", "body"},
    {"{} {}", "body"},
    {R"({"cmd":"ls","cmd":"ls"})", "body"},
    {R"({"cmd":"ls","extra":1})", "extra"},
    {R"({"cmd":"ls","\u0001":1})", "\"\\u0001\""},
    {R"({})", "cmd"},
    {R"({"cmd":""})", "cmd"},
    {R"({"cmd":"   "})", "cmd"},
    {R"({"cmd":5})", "cmd"},
    {R"({"cmd":"a\u0000b"})", "cmd"},
    {R"({"argv":[]})", "argv"},
    {R"({"argv":[""]})", "argv[0]"},
    {R"({"argv":"ls"})", "argv"},
    {R"({"argv":["ls",1]})", "argv[1]"},
    {R"({"argv":["ls","a\u0000"]})", "argv[1]"},
    {R"({"argv":["ls"],"cmd":"ls"})", "argv"},
    {R"({"argv":["ls"],"env":{"1X":"v"}})", "env"},
    {R"({"argv":["ls"],"env":{"A-B":"v"}})", "env"},
    {R"({"argv":["ls"],"env":{"_tX":"v"}})", "env"},
    {R"({"argv":["ls"],"env":{"":"v"}})", "env"},
    {R"({"argv":["ls"],"env":{"A":1}})", "env.A"},
    {R"({"argv":["ls"],"env":["A=1"]})", "env"},
    {R"({"argv":["ls"],"cwd":"rel/dir"})", "cwd"},
    {R"({"argv":["ls"],"cwd":""})", "cwd"},
    {R"({"argv":["ls"],"executionTimeout":0})", "executionTimeout"},
    {R"({"argv":["ls"],"executionTimeout":-5})", "executionTimeout"},
    {R"({"argv":["ls"],"executionTimeout":1.5})", "executionTimeout"},
    {R"({"argv":["ls"],"executionTimeout":"10"})", "executionTimeout"},
    {R"({"argv":["ls"],"executionTimeout":1e300})", "executionTimeout"},
    {R"({"argv":["ls"],"stdin":"maybe"})", "stdin"},
    {R"({"argv":["ls"],"keepLogs":"forever"})", "keepLogs"},
    {R"({"argv":["ls"],"name":""})", "name"},
    {R"({"argv":["ls"],"name":"a\nb"})", "name"},
    {R"({"argv":["ls"],"processKey":""})", "processKey"},
    {R"({"cmd":"ls","shell":"python"})", "shell"},
    {R"({"cmd":"ls","shell":"bin/bash"})", "shell"},
    {R"({"argv":["ls"],"shell":"bash"})", "shell"},
};

TEST(RequestsTest, EveryBadProcessStartIs400NamingTheField) {
  for (const auto& c : kBadStarts) {
    ApiError e = errorOf(decodeStartProcess(c.body));
    EXPECT_EQ(e.code, ApiCode::kInvalidArgument) << c.body;
    EXPECT_TRUE(e.message.starts_with(std::string(c.field) + ":")) << c.body << " -> " << e.message;
  }
}

TEST(RequestsTest, AValidStartDecodesEveryField) {
  const auto& r = valueOf(decodeStartProcess(
      R"({"argv":["/bin/echo","hi"],"name":"job","cwd":"/workspace","env":{"A":"1","_x":"2"},"stdin":"open",)"
      R"("executionTimeout":5000,"keepLogs":"none","processKey":"k-1"})"));
  EXPECT_EQ(r.argv, (std::vector<std::string>{"/bin/echo", "hi"}));
  EXPECT_EQ(r.name, "job");
  EXPECT_EQ(r.cwd, "/workspace");
  EXPECT_EQ(r.env.at("A"), "1");
  EXPECT_EQ(r.stdinMode, StdinMode::kOpen);
  EXPECT_EQ(r.executionTimeoutMs, 5000u);
  EXPECT_EQ(r.keepLogs, KeepLogs::kNone);
  EXPECT_EQ(r.processKey, "k-1");
  EXPECT_FALSE(r.timeoutMs);
  const auto& s = valueOf(decodeStartProcess(R"({"cmd":"echo $A","shell":"/bin/sh"})"));
  EXPECT_EQ(s.cmd, "echo $A");
  EXPECT_EQ(s.shell, "/bin/sh");
}

TEST(RequestsTest, RunTakesATimeoutThatStartRefuses) {
  EXPECT_EQ(valueOf(decodeRunProcess(R"({"cmd":"true","timeout":0})")).timeoutMs, 0u);
  EXPECT_TRUE(errorOf(decodeStartProcess(R"({"cmd":"true","timeout":0})")).message.starts_with("timeout:"));
}

TEST(RequestsTest, DeepNestingIsRefusedWithoutRecursion) {
  std::string deep(100000, '[');
  ApiError e = errorOf(decodeStartProcess(deep));
  EXPECT_TRUE(e.message.starts_with("body:")) << e.message;
  EXPECT_NE(e.message.find("deeper"), std::string::npos) << e.message;
}

TEST(RequestsTest, InvalidUtf8IsRefused) {
  ApiError e = errorOf(decodeStartProcess("{\"cmd\":\"\xff\"}"));
  EXPECT_TRUE(e.message.starts_with("body:")) << e.message;
}

TEST(RequestsTest, SandboxPolicyErrorsNameThePolicyField) {
  ApiError e = errorOf(decodeCreateSandbox(R"({"policy":{"network":{"allowedDomains":["*.com"]}}})"));
  EXPECT_EQ(e.code, ApiCode::kInvalidPolicy);
  EXPECT_TRUE(e.message.starts_with("policy.network.allowedDomains[0]:")) << e.message;
  e = errorOf(decodeCreateSandbox(R"({"policy":{"filesystem":{"denyRead":[],"bogus":1}}})"));
  EXPECT_EQ(e.code, ApiCode::kInvalidPolicy);
  EXPECT_NE(e.message.find("bogus"), std::string::npos) << e.message;
  EXPECT_TRUE(errorOf(decodeCreateSandbox(R"({})")).message.starts_with("policy:"));
  EXPECT_TRUE(errorOf(decodeCreateSandbox(R"({"policy":[]})")).message.starts_with("policy:"));
  EXPECT_TRUE(errorOf(decodeCreateSandbox(R"({"policy":{},"workspace":"rel"})")).message.starts_with("workspace:"));
  EXPECT_TRUE(errorOf(decodeCreateSandbox(R"({"policy":{},"x":1})")).message.starts_with("x:"));
  const auto& ok = valueOf(decodeCreateSandbox(R"({"policy":{"filesystem":{"allowWrite":["."]}},"workspace":"/w"})"));
  ASSERT_TRUE(ok.policy);
  EXPECT_EQ(ok.policy->filesystem().allowWrite, std::vector<std::string>{"."});
  EXPECT_EQ(ok.workspace, "/w");
  EXPECT_TRUE(errorOf(decodeNarrow(R"({"policy":{"env":{"allow":["1A"]}}})")).message.starts_with("policy.env.allow[0]"));
}

TEST(RequestsTest, KillWaitStdinTerminateValidateTheirFields) {
  EXPECT_EQ(valueOf(decodeKill("")).signal, Signal::kTerm);
  const auto& k = valueOf(decodeKill(R"({"signal":"INT","escalateAfter":100,"escalateTo":"KILL"})"));
  EXPECT_EQ(signalNumber(k.signal), 2);
  EXPECT_EQ(k.escalateAfterMs, 100u);
  EXPECT_TRUE(errorOf(decodeKill(R"({"signal":"SIGTERM"})")).message.starts_with("signal:"));
  EXPECT_TRUE(errorOf(decodeKill(R"({"escalateTo":"KILL"})")).message.starts_with("escalateTo:"));
  EXPECT_FALSE(valueOf(decodeWait("{}")).timeoutMs);
  EXPECT_TRUE(errorOf(decodeWait(R"({"timeout":true})")).message.starts_with("timeout:"));
  EXPECT_EQ(valueOf(decodeStdin(R"({"data":"aGk=","encoding":"base64"})")).data, "hi");
  EXPECT_TRUE(valueOf(decodeStdin(R"({"eof":true})")).eof);
  EXPECT_TRUE(errorOf(decodeStdin(R"({"data":"a","encoding":"base64"})")).message.starts_with("data:"));
  EXPECT_TRUE(errorOf(decodeStdin(R"({})")).message.starts_with("data:"));
  EXPECT_TRUE(errorOf(decodeStdin(R"({"data":"x","encoding":"hex"})")).message.starts_with("encoding:"));
  EXPECT_EQ(valueOf(decodeTerminate(R"({"processKey":"k"})")).processKey, "k");
  EXPECT_TRUE(errorOf(decodeTerminate(R"({})")).message.starts_with("processKey:"));
  EXPECT_TRUE(errorOf(decodeTerminate(R"({"processKey":7})")).message.starts_with("processKey:"));
}

TEST(RequestsTest, SessionsPtysAndCodeValidateTheirFields) {
  EXPECT_TRUE(errorOf(decodeSessionRun(R"({})")).message.starts_with("command:"));
  EXPECT_TRUE(errorOf(decodeSessionRun(R"({"command":""})")).message.starts_with("command:"));
  EXPECT_EQ(valueOf(decodeSessionRun(R"({"command":"cd /","timeout":10})")).timeoutMs, 10u);
  EXPECT_TRUE(errorOf(decodeSessionStart(R"({"command":"x","timeout":10})")).message.starts_with("timeout:"));
  EXPECT_TRUE(errorOf(decodeCreateSession(R"({"shell":"fish"})")).message.starts_with("shell:"));
  EXPECT_TRUE(errorOf(decodeCreateSession(R"({"env":{"_tA":"1"}})")).message.starts_with("env:"));
  auto pty = valueOf(decodeStartPty(R"({"cols":120,"rows":40})"));
  EXPECT_EQ(pty.size.cols, 120);
  EXPECT_EQ(pty.size.rows, 40);
  EXPECT_TRUE(errorOf(decodeStartPty(R"({"cols":120})")).message.starts_with("rows:"));
  EXPECT_TRUE(errorOf(decodeResize(R"({"cols":0,"rows":1})")).message.starts_with("cols:"));
  EXPECT_TRUE(errorOf(decodeResize(R"({})")).message.starts_with("cols:"));
  EXPECT_TRUE(errorOf(decodeRunCode(R"({"code":"1","language":"cobol"})")).message.starts_with("language:"));
}

TEST(RequestsTest, RunCodeDecodesItsFieldsAndTakesTimeoutInSeconds) {
  auto q = valueOf(decodeRunCode(R"({"code":"x = 1","timeout":2.5})"));
  EXPECT_EQ(q.code, "x = 1");
  EXPECT_EQ(q.language, "python") << "the default";
  EXPECT_EQ(q.timeoutMs, 2500u) << "seconds, as seed 002's runCode";
  EXPECT_FALSE(valueOf(decodeRunCode(R"({"code":"1","language":"python"})")).timeoutMs);
  const BadBody bad[] = {
      {"", "body"},
      {R"({})", "code"},
      {R"({"code":null})", "code"},
      {R"({"code":" \t\n"})", "code"},
      {R"({"code":"1","language":"ruby"})", "language"},
      {R"({"code":"1","timeout":true})", "timeout"},
      {R"({"code":"1","timeout":0.0001})", "timeout"},
      {R"({"code":"1","timeout":86401})", "timeout"},
      {R"({"code":"1","other":1})", "other"},
  };
  for (const auto& b : bad) {
    ApiError e = errorOf(decodeRunCode(b.body));
    EXPECT_EQ(e.status(), 400) << b.body;
    EXPECT_TRUE(e.message.starts_with(b.field)) << b.body << " -> " << e.message;
  }
  EXPECT_TRUE(errorOf(decodeRunCode("{\"code\":\"" + std::string(kMaxCodeBytes + 1, 'x') + "\"}"))
                  .message.starts_with("code: is 1048577 bytes"));
}

TEST(RequestsTest, QueriesRefuseUnknownKeysAndBadValues) {
  EXPECT_EQ(valueOf(decodeListProcesses({{"state", "running"}})).state, "running");
  EXPECT_TRUE(errorOf(decodeListProcesses({{"state", "dead"}})).message.starts_with("query.state:"));
  EXPECT_TRUE(errorOf(decodeListProcesses({{"foo", "1"}})).message.starts_with("query:"));
  EXPECT_EQ(valueOf(decodeLogs({{"limit", "10"}, {"encoding", "base64"}})).limit, 10u);
  for (const char* bad : {"0", "-1", "10001", "1e3", "", "99999999999"})
    EXPECT_TRUE(errorOf(decodeLogs({{"limit", bad}})).message.starts_with("query.limit:")) << bad;
  EXPECT_TRUE(errorOf(decodeLogStream({{"limit", "5"}})).message.starts_with("query:"));
  EXPECT_TRUE(requireEmptyQuery({{"a", ""}}).has_value());
  EXPECT_FALSE(requireEmptyBody("").has_value());
  EXPECT_FALSE(requireEmptyBody("{}").has_value());
  EXPECT_TRUE(requireEmptyBody(R"({"a":1})").has_value());
}

TEST(Base64Test, RoundTripsAndRefusesNonCanonicalText) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    EXPECT_EQ(base64Decode(base64Encode(s)), s);
  EXPECT_EQ(base64Encode("hi"), "aGk=");
  for (const char* bad : {"a", "aGk", "aG=k", "aGk=aGk=", "aGl=", "a Gk=", "aGk\n", "====", "a==="})
    EXPECT_FALSE(base64Decode(bad)) << bad;
}

}  // namespace
}  // namespace stockade::daemon
