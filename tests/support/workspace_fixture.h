// A workspace on a real directory for tests: t_/ws is the workspace, t_/outside
// a sibling the sandbox must never reach (it holds a sentinel secret), and
// the rules derived from a policy that spells out every filesystem field.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "stockade/policy.h"
#include "stockade/rules.h"
#include "stockade/workspace.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tree_listing.h"
#include "tests/support/workspace_results.h"

namespace stockade::testing {

// The workspace writable, .env and .secret denied.
inline constexpr const char* kWorkspacePolicy = R"({
  "filesystem": {"denyRead": [".secret"], "allowRead": [], "allowWrite": ["."], "denyWrite": [".env"]},
  "network": {"allowedDomains": [], "deniedDomains": [], "allowUnixSockets": [], "allowLocalBinding": false},
  "limits": {"memoryBytes": 0, "pids": 0, "cpuSeconds": 0, "fileSizeBytes": 0}
})";

class WorkspaceFixture : public ::testing::Test {
 protected:
  DerivedRules deriveRules(const std::string& json) {
    auto r = derive(SandboxPolicy::fromJson(json), {.home = home_, .cwd = ws_, .tmpdir = std::nullopt});
    if (auto* e = std::get_if<PolicyError>(&r)) {
      ADD_FAILURE() << e->text();
      throw std::runtime_error("policy");
    }
    return std::get<DerivedRules>(std::move(r));
  }

  Workspace open(const std::string& json = kWorkspacePolicy, WorkspaceOptions options = {}) {
    auto rules = std::make_shared<DerivedRules>(deriveRules(json));
    options.hostPath = ws_;
    options.rules = [rules] { return *rules; };
    auto w = Workspace::open(std::move(options));
    if (auto* e = std::get_if<WorkspaceError>(&w)) {
      ADD_FAILURE() << e->message;
      throw std::runtime_error("open");
    }
    return std::get<Workspace>(std::move(w));
  }

  // Everything under the temporary root: the workspace and what lies beside it.
  std::map<std::string, std::string> host() const { return listTree(t_.path()); }
  std::map<std::string, std::string> workspaceListing() const { return listTree(ws_); }

  TempDir t_;
  std::string ws_ = t_.dir("ws");
  std::string outside_ = t_.dir("outside");
  std::string home_ = t_.dir("home");
  std::string secret_ = t_.file("outside/secret", "OUTSIDE-SECRET\n");
};

}  // namespace stockade::testing
