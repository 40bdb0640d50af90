// A fixture for tests of the process-global manager: every test starts and
// ends with no live sandbox, and audit events are captured as JSON.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stockade/stockade.h"

namespace stockade::testing {

class ManagerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    SandboxManager::instance().resetForTesting();
    SandboxManager::instance().setAuditSink([this](const std::string& line) {
      std::lock_guard lock(auditMu_);
      audit_.push_back(nlohmann::json::parse(line));
    });
  }
  void TearDown() override {
    SandboxManager::instance().resetForTesting();
    SandboxManager::instance().setAuditSink(nullptr);
  }

  // True when some audit event satisfies `pred`.
  template <typename Pred>
  bool auditedWhere(Pred pred) {
    std::lock_guard lock(auditMu_);
    return std::any_of(audit_.begin(), audit_.end(), pred);
  }
  bool audited(const std::string& event) {
    return auditedWhere([&](const nlohmann::json& j) { return j["event"] == event; });
  }

 private:
  std::mutex auditMu_;
  std::vector<nlohmann::json> audit_;
};

}  // namespace stockade::testing
