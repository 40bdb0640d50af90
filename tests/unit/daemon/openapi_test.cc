// docs/openapi.json describes exactly the routes the daemon serves: the
// route table (src/daemon/routes.cc) is the source, and this test fails
// when either side has an operation the other lacks.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "src/daemon/routes.h"

namespace stockade::daemon {
namespace {

using nlohmann::json;

json loadSpec() {
  std::ifstream in(std::string(STOCKADE_SOURCE_DIR) + "/docs/openapi.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

std::string lowerMethod(Method m) {
  std::string s(methodName(m));
  for (char& c : s) c = static_cast<char>(c - 'A' + 'a');
  return s;
}

TEST(OpenApiTest, TheSpecListsExactlyTheServedRoutes) {
  json spec = loadSpec();
  ASSERT_EQ(spec["openapi"].get<std::string>().substr(0, 2), "3.");
  std::set<std::pair<std::string, std::string>> documented, served;
  for (auto& [path, item] : spec["paths"].items())
    for (auto& [key, op] : item.items())
      if (key != "parameters") documented.insert({key, path});
  for (const Route& r : routes()) served.insert({lowerMethod(r.method), std::string(r.pattern)});
  for (const auto& s : served) EXPECT_TRUE(documented.count(s)) << "served but not in docs/openapi.json: " << s.first << " " << s.second;
  for (const auto& d : documented) EXPECT_TRUE(served.count(d)) << "documented but not served: " << d.first << " " << d.second;
}

TEST(OpenApiTest, EachOperationMatchesItsRoutesAccessBodyAndParameters) {
  json spec = loadSpec();
  ASSERT_TRUE(spec["components"]["securitySchemes"].contains("bearer"));
  for (const Route& r : routes()) {
    std::string path(r.pattern);
    const json& item = spec["paths"][path];
    const json& op = item[lowerMethod(r.method)];
    ASSERT_TRUE(op.is_object()) << path;
    bool publicOp = op.contains("security") && op["security"].empty();
    EXPECT_EQ(publicOp, r.access == Access::kPublic) << path << ": security does not match the route's access";
    EXPECT_EQ(op.contains("requestBody"), r.body != BodyKind::kNone) << path;
    if (op.contains("requestBody")) {
      // JSON bodies as JSON; streamed bodies as the bytes they are.
      const json& content = op["requestBody"]["content"];
      EXPECT_EQ(content.contains("application/json"), r.body == BodyKind::kJson) << path;
    }
    if (r.reply == ReplyKind::kBytes || r.reply == ReplyKind::kStream) {
      const json& ok = op["responses"]["200"]["content"];
      ASSERT_TRUE(ok.is_object()) << path;
      EXPECT_FALSE(ok.contains("application/json")) << path << ": a stream of bytes or NDJSON, not one JSON body";
    }
    EXPECT_TRUE(op["responses"].is_object() && !op["responses"].empty()) << path;
    if (r.access == Access::kToken) {
      EXPECT_TRUE(op["responses"].contains("401")) << path;
    }
    // Every {param} of the pattern is declared.
    std::set<std::string> declared;
    for (const json* ps : {&item, &op}) {
      if (!ps->contains("parameters")) continue;
      for (const auto& p : (*ps)["parameters"]) {
        if (p["in"] == "path") declared.insert(p["name"]);
      }
    }
    for (std::size_t open = path.find('{'); open != std::string::npos; open = path.find('{', open + 1)) {
      std::string name = path.substr(open + 1, path.find('}', open) - open - 1);
      EXPECT_TRUE(declared.count(name)) << path << ": {" << name << "} is not declared";
    }
  }
}

}  // namespace
}  // namespace stockade::daemon
