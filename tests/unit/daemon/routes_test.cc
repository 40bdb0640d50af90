#include "src/daemon/routes.h"

#include <gtest/gtest.h>

#include <set>

namespace stockade::daemon {
namespace {

constexpr Route kTable[] = {
    {Method::kGet, "/v1/health", RouteId::kHealth, Access::kPublic, BodyKind::kNone, ReplyKind::kJson, ""},
    {Method::kGet, "/v1/sandboxes", RouteId::kListSandboxes, Access::kToken, BodyKind::kNone, ReplyKind::kJson, ""},
    {Method::kPost, "/v1/sandboxes", RouteId::kCreateSandbox, Access::kToken, BodyKind::kJson, ReplyKind::kJson, ""},
    {Method::kGet, "/v1/sandboxes/{id}", RouteId::kGetSandbox, Access::kToken, BodyKind::kNone, ReplyKind::kJson, ""},
    {Method::kGet, "/v1/sandboxes/{id}/processes/{pid}/logs/stream", RouteId::kProcessLogStream, Access::kToken,
     BodyKind::kNone, ReplyKind::kStream, ""},
};

RouteMatch ok(Method m, std::string_view path) {
  auto r = matchRoute(kTable, m, path);
  if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << path << ": " << e->message;
  return std::get<RouteMatch>(r);
}

ApiError err(Method m, std::string_view path) {
  auto r = matchRoute(kTable, m, path);
  EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << path;
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}

TEST(RoutesTest, LiteralAndParameterSegmentsMatch) {
  EXPECT_EQ(ok(Method::kGet, "/v1/health").route->id, RouteId::kHealth);
  EXPECT_EQ(ok(Method::kPost, "/v1/sandboxes").route->id, RouteId::kCreateSandbox);
  auto m = ok(Method::kGet, "/v1/sandboxes/sb_0123abcd/processes/p-7/logs/stream");
  EXPECT_EQ(m.route->id, RouteId::kProcessLogStream);
  EXPECT_EQ(m.param("id"), "sb_0123abcd");
  EXPECT_EQ(m.param("pid"), "p-7");
  EXPECT_EQ(m.param("nope"), "");
}

TEST(RoutesTest, UnknownPathsAreNotFound) {
  for (std::string_view p : {"", "/", "v1/health", "/v1/health/", "//v1/health", "/v1/sandboxes//x", "/v2/health",
                             "/v1/sandboxes/a/b"})
    EXPECT_EQ(err(Method::kGet, p).code, ApiCode::kNotFound) << p;
}

TEST(RoutesTest, AnotherMethodOnAServedPathIs405NamingTheAllowedOnes) {
  ApiError e = err(Method::kDelete, "/v1/sandboxes");
  EXPECT_EQ(e.code, ApiCode::kMethodNotAllowed);
  EXPECT_NE(e.message.find("GET, POST"), std::string::npos) << e.message;
  EXPECT_EQ(allowedMethods(kTable, "/v1/sandboxes"), "GET, POST");
  EXPECT_EQ(allowedMethods(kTable, "/nope"), "");
}

TEST(RoutesTest, AParameterThatIsNotAnIdIs400NamingIt) {
  for (std::string_view p : {"/v1/sandboxes/..", "/v1/sandboxes/.", "/v1/sandboxes/a%2e", "/v1/sandboxes/a b",
                             "/v1/sandboxes/\xff"}) {
    ApiError e = err(Method::kGet, p);
    EXPECT_EQ(e.code, ApiCode::kInvalidArgument) << p;
    EXPECT_NE(e.message.find("{id}"), std::string::npos) << e.message;
  }
  EXPECT_EQ(err(Method::kGet, "/v1/sandboxes/" + std::string(129, 'a')).code, ApiCode::kInvalidArgument);
  ok(Method::kGet, "/v1/sandboxes/" + std::string(128, 'a'));
}

TEST(RoutesTest, TheDaemonTableHasNoDuplicatesAndWellFormedPatterns) {
  std::set<std::pair<Method, std::string_view>> seen;
  for (const Route& r : routes()) {
    EXPECT_TRUE(seen.insert({r.method, r.pattern}).second) << r.pattern;
    EXPECT_TRUE(r.pattern.starts_with("/v1/")) << r.pattern;
    EXPECT_FALSE(r.summary.empty()) << r.pattern;
    // Every route in the table matches its own pattern with ids filled in.
    std::string path(r.pattern);
    for (std::size_t open; (open = path.find('{')) != std::string::npos;)
      path.replace(open, path.find('}', open) - open + 1, "x1");
    auto m = matchRoute(routes(), r.method, path);
    ASSERT_TRUE(std::holds_alternative<RouteMatch>(m)) << r.pattern;
    EXPECT_EQ(std::get<RouteMatch>(m).route, &r);
  }
}

TEST(RoutesTest, NoPathFitsTwoRoutesOfOneMethod) {
  // Every pattern with its parameters filled by the literals of the others.
  for (const Route& a : routes()) {
    for (const Route& b : routes()) {
      if (&a == &b || a.method != b.method) continue;
      std::vector<std::string> pa, pb;
      std::string sa(a.pattern), sb(b.pattern);
      for (std::size_t i = 0, j; i < sa.size(); i = j + 1) pa.push_back(sa.substr(i, (j = std::min(sa.find('/', i), sa.size())) - i));
      for (std::size_t i = 0, j; i < sb.size(); i = j + 1) pb.push_back(sb.substr(i, (j = std::min(sb.find('/', i), sb.size())) - i));
      if (pa.size() != pb.size()) continue;
      bool overlap = true;
      for (std::size_t k = 0; k < pa.size() && overlap; ++k)
        overlap = pa[k] == pb[k] || pa[k].starts_with("{") || pb[k].starts_with("{");
      EXPECT_FALSE(overlap) << methodName(a.method) << " " << a.pattern << " and " << b.pattern << " fit one path";
    }
  }
}

TEST(RoutesTest, QueryStringsDecodeAndRefuseRepeatsAndBadEscapes) {
  auto q = parseQuery("a=1&b=x%20y+z&c=&d");
  ASSERT_TRUE(std::holds_alternative<Query>(q));
  auto& m = std::get<Query>(q);
  EXPECT_EQ(m.at("a"), "1");
  EXPECT_EQ(m.at("b"), "x y z");
  EXPECT_EQ(m.at("c"), "");
  EXPECT_EQ(m.at("d"), "");
  for (std::string_view bad : {"a=1&a=2", "a=%zz", "a=%0", "a=%", "%00=1", "%41%=1"}) {
    auto r = parseQuery(bad);
    ASSERT_TRUE(std::holds_alternative<ApiError>(r)) << bad;
    EXPECT_EQ(std::get<ApiError>(r).code, ApiCode::kInvalidArgument);
  }
  // A NUL byte in a value is kept for its decoder to judge (a sandbox path
  // holding one is invalid_path, as the workspace API says).
  auto nul = parseQuery("path=/workspace/a%00b");
  ASSERT_TRUE(std::holds_alternative<Query>(nul));
  EXPECT_EQ(std::get<Query>(nul).at("path"), std::string("/workspace/a\0b", 14));
  EXPECT_EQ(splitTarget("/a?b=1").path, "/a");
  EXPECT_EQ(splitTarget("/a?b=1").query, "b=1");
  EXPECT_EQ(splitTarget("/a").query, "");
}

}  // namespace
}  // namespace stockade::daemon
