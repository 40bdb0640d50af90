#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "stockade/rules.h"

namespace stockade {
namespace {

template <typename Rule>
std::vector<std::string> texts(const std::vector<Rule>& rules) {
  std::vector<std::string> out;
  for (const auto& r : rules) out.push_back(r.text());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> scalar(std::uint64_t v) { return {std::to_string(v)}; }

}  // namespace

RulesDiff diff(const DerivedRules& a, const DerivedRules& b) {
  RulesDiff out;
  auto axis = [&](const char* name, std::vector<std::string> x, std::vector<std::string> y) {
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    RulesDiff::Axis ax{name, {}, {}};
    std::set_difference(y.begin(), y.end(), x.begin(), x.end(), std::back_inserter(ax.added));
    std::set_difference(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(ax.removed));
    if (!ax.added.empty() || !ax.removed.empty()) out.axes.push_back(std::move(ax));
  };
  const auto &fa = a.filesystem(), &fb = b.filesystem();
  axis("filesystem.denyRead", fa.denyRead, fb.denyRead);
  axis("filesystem.denyReadPatterns", fa.denyReadPatterns, fb.denyReadPatterns);
  axis("filesystem.allowRead", fa.allowRead, fb.allowRead);
  axis("filesystem.allowReadPatterns", fa.allowReadPatterns, fb.allowReadPatterns);
  axis("filesystem.allowWrite", fa.allowWrite, fb.allowWrite);
  axis("filesystem.defaultWrite", fa.defaultWrite, fb.defaultWrite);
  axis("filesystem.denyWrite", fa.denyWrite, fb.denyWrite);
  axis("filesystem.denyWritePatterns", fa.denyWritePatterns, fb.denyWritePatterns);
  axis("filesystem.mandatoryDenyWrite", fa.mandatoryDenyWrite, fb.mandatoryDenyWrite);
  axis("filesystem.allowWriteSystemPaths", {fa.allowWriteSystemPaths ? "true" : "false"},
       {fb.allowWriteSystemPaths ? "true" : "false"});
  axis("filesystem.protectedNames", texts(fa.protectedNames), texts(fb.protectedNames));
  const auto &na = a.network(), &nb = b.network();
  axis("network.allowedDomains", texts(na.allowedDomains), texts(nb.allowedDomains));
  axis("network.deniedDomains", texts(na.deniedDomains), texts(nb.deniedDomains));
  axis("network.allowUnixSockets", na.allowUnixSockets, nb.allowUnixSockets);
  axis("network.allowAllUnixSockets", {na.allowAllUnixSockets ? "true" : "false"},
       {nb.allowAllUnixSockets ? "true" : "false"});
  axis("network.allowLocalBinding", {na.allowLocalBinding ? "true" : "false"},
       {nb.allowLocalBinding ? "true" : "false"});
  axis("env.allow", a.envAllow(), b.envAllow());
  axis("limits.memoryBytes", scalar(a.limits().memoryBytes), scalar(b.limits().memoryBytes));
  axis("limits.pids", scalar(a.limits().pids), scalar(b.limits().pids));
  axis("limits.cpuSeconds", scalar(a.limits().cpuSeconds), scalar(b.limits().cpuSeconds));
  axis("limits.fileSizeBytes", scalar(a.limits().fileSizeBytes), scalar(b.limits().fileSizeBytes));
  out.widening = narrowing(a, b);
  return out;
}

std::string RulesDiff::toJson() const {
  nlohmann::json axesJson = nlohmann::json::object();
  for (const auto& ax : axes) axesJson[ax.name] = {{"added", ax.added}, {"removed", ax.removed}};
  nlohmann::json j = {{"axes", axesJson}, {"widens", widening.has_value()}};
  j["widening"] = widening ? nlohmann::json{{"axis", widening->axis}, {"entry", widening->entry},
                                            {"message", widening->message}}
                           : nlohmann::json(nullptr);
  return j.dump(2);
}

}  // namespace stockade
