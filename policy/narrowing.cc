// narrowing(): is a candidate's rule set inside its base's, axis by axis?
//
// Reads and writes are decided by path-prefix rules, so the decision for any
// path equals the decision at the deepest rule entry above it. Checking every
// entry of both rule sets (the "critical points") therefore checks every path.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "policy/paths.h"
#include "policy/text.h"
#include "stockade/rules.h"

namespace stockade {
namespace {


Widening widening(std::string axis, std::string entry, const std::string& why) {
  std::string message = axis + ": " + policy::quote(entry) + " " + why;
  return {std::move(axis), std::move(entry), std::move(message)};
}

std::optional<Widening> readAxis(const DerivedRules& base, const DerivedRules& cand) {
  for (const auto& pattern : base.filesystem().denyReadPatterns) {
    const auto& mine = cand.filesystem().denyReadPatterns;
    if (std::find(mine.begin(), mine.end(), pattern) == mine.end())
      return widening("filesystem.denyRead", pattern, "is a deny pattern of the base policy that the candidate drops");
  }
  for (const auto& pattern : cand.filesystem().allowReadPatterns) {
    const auto& theirs = base.filesystem().allowReadPatterns;
    if (std::find(theirs.begin(), theirs.end(), pattern) == theirs.end())
      return widening("filesystem.allowRead", pattern, "is a carve-out pattern the base policy does not have");
  }
  for (const auto& p : cand.filesystem().allowRead) {
    if (cand.readable(p) && !base.readable(p))
      return widening("filesystem.allowRead", p, "is read-denied by the base policy; a carve-out there widens it");
  }
  for (const auto& list : {&base.filesystem().denyRead, &base.filesystem().allowRead, &cand.filesystem().denyRead}) {
    for (const auto& p : *list) {
      if (cand.readable(p) && !base.readable(p))
        return widening("filesystem.denyRead", p, "is read-denied by the base policy but readable under the candidate");
    }
  }
  return std::nullopt;
}

std::optional<Widening> writeAxis(const DerivedRules& base, const DerivedRules& cand) {
  const auto& bfs = base.filesystem();
  // A pattern stands for names that may appear later: the candidate keeps each.
  for (const auto& pattern : bfs.denyWritePatterns) {
    const auto& mine = cand.filesystem().denyWritePatterns;
    if (std::find(mine.begin(), mine.end(), pattern) == mine.end())
      return widening("filesystem.denyWrite", pattern, "is a deny pattern of the base policy that the candidate drops");
  }
  for (const auto& name : bfs.protectedNames) {
    const auto& mine = cand.filesystem().protectedNames;
    if (!std::binary_search(mine.begin(), mine.end(), name))
      return widening("filesystem.protectedNames", name.text(), "is protected by the base policy but not by the candidate");
  }
  for (const auto* roots : {&cand.filesystem().allowWrite, &cand.filesystem().defaultWrite}) {
    const char* axis = roots == &cand.filesystem().allowWrite ? "filesystem.allowWrite" : "filesystem.defaultWrite";
    for (const auto& root : *roots) {
      if (cand.writable(root) && !base.writable(root)) {
        bool inside = std::any_of(bfs.allowWrite.begin(), bfs.allowWrite.end(),
                                  [&](const auto& w) { return policy::isWithin(root, w); }) ||
                      std::any_of(bfs.defaultWrite.begin(), bfs.defaultWrite.end(),
                                  [&](const auto& w) { return policy::isWithin(root, w); });
        return widening(axis, root,
                        inside ? "is write-denied by the base policy" : "is not inside any writable path of the base policy");
      }
      // Base denies beneath this root must stay denied.
      for (const auto* denies : {&bfs.denyWrite, &bfs.mandatoryDenyWrite}) {
        const char* denyAxis = denies == &bfs.denyWrite ? "filesystem.denyWrite" : "filesystem.mandatoryDenyWrite";
        for (const auto& d : *denies) {
          if (policy::isWithin(d, root) && cand.writable(d) && !base.writable(d))
            return widening(denyAxis, d, "is write-denied by the base policy but writable under the candidate");
        }
      }
    }
  }
  return std::nullopt;
}

bool portsOverlap(const DomainRule& a, const DomainRule& b) { return !a.port || !b.port || a.port == b.port; }

bool overlaps(const DomainRule& a, const DomainRule& b) {
  DomainRule anyA{a.host, std::nullopt}, anyB{b.host, std::nullopt};
  return portsOverlap(a, b) && (anyA.within(anyB) || anyB.within(anyA));
}

std::optional<Widening> networkAxis(const DerivedRules& base, const DerivedRules& cand) {
  const auto& bn = base.network();
  const auto& cn = cand.network();
  for (const auto& a : cn.allowedDomains) {
    bool covered = std::any_of(bn.allowedDomains.begin(), bn.allowedDomains.end(),
                               [&](const DomainRule& b) { return a.within(b); });
    if (!covered)
      return widening("network.allowedDomains", a.text(), "is not inside any allowed domain of the base policy");
  }
  for (const auto& d : bn.deniedDomains) {
    bool reachable = std::any_of(cn.allowedDomains.begin(), cn.allowedDomains.end(),
                                 [&](const DomainRule& a) { return overlaps(a, d); });
    bool denied = std::any_of(cn.deniedDomains.begin(), cn.deniedDomains.end(),
                              [&](const DomainRule& c) { return d.within(c); });
    if (reachable && !denied)
      return widening("network.deniedDomains", d.text(), "is denied by the base policy but not by the candidate");
  }
  for (const auto& s : cn.allowUnixSockets) {
    bool covered = std::any_of(bn.allowUnixSockets.begin(), bn.allowUnixSockets.end(),
                               [&](const std::string& b) { return policy::isWithin(s, b); });
    if (!covered)
      return widening("network.allowUnixSockets", s, "is not inside any unix socket path the base policy allows");
  }
  if (cn.allowAllUnixSockets && !bn.allowAllUnixSockets)
    return widening("network.allowAllUnixSockets", "true", "is not allowed by the base policy");
  if (cn.allowLocalBinding && !bn.allowLocalBinding)
    return widening("network.allowLocalBinding", "true", "is not allowed by the base policy");
  return std::nullopt;
}

std::optional<Widening> envAxis(const DerivedRules& base, const DerivedRules& cand) {
  for (const auto& name : cand.envAllow()) {
    if (!std::binary_search(base.envAllow().begin(), base.envAllow().end(), name))
      return widening("env.allow", name, "is not passed by the base policy");
  }
  return std::nullopt;
}

std::optional<Widening> limitsAxis(const DerivedRules& base, const DerivedRules& cand) {
  struct Field {
    const char* name;
    std::uint64_t Limits::*member;
  };
  for (auto [name, member] : {Field{"memoryBytes", &Limits::memoryBytes}, Field{"pids", &Limits::pids},
                              Field{"cpuSeconds", &Limits::cpuSeconds}, Field{"fileSizeBytes", &Limits::fileSizeBytes}}) {
    std::uint64_t b = base.limits().*member, c = cand.limits().*member;
    if (b == 0) continue;  // unlimited covers everything
    if (c == 0 || c > b)
      return widening(std::string("limits.") + name, std::to_string(c),
                      c == 0 ? "lifts the base policy's limit of " + std::to_string(b)
                             : "exceeds the base policy's limit of " + std::to_string(b));
  }
  return std::nullopt;
}

}  // namespace

DerivedRules::Network intersectNetworks(const DerivedRules::Network& a, const DerivedRules::Network& b) {
  DerivedRules::Network out;
  auto keepInside = [&out](const std::vector<DomainRule>& from, const std::vector<DomainRule>& outer) {
    for (const auto& r : from) {
      if (std::any_of(outer.begin(), outer.end(), [&](const DomainRule& o) { return r.within(o); }))
        out.allowedDomains.push_back(r);
    }
  };
  keepInside(a.allowedDomains, b.allowedDomains);
  keepInside(b.allowedDomains, a.allowedDomains);
  out.deniedDomains = a.deniedDomains;
  out.deniedDomains.insert(out.deniedDomains.end(), b.deniedDomains.begin(), b.deniedDomains.end());
  for (const auto* list : {&a.allowUnixSockets, &b.allowUnixSockets}) {
    const auto& other = list == &a.allowUnixSockets ? b.allowUnixSockets : a.allowUnixSockets;
    for (const auto& p : *list) {
      if (std::any_of(other.begin(), other.end(), [&](const std::string& o) { return policy::isWithin(p, o); }))
        out.allowUnixSockets.push_back(p);
    }
  }
  for (auto* v : {&out.allowedDomains, &out.deniedDomains}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  std::sort(out.allowUnixSockets.begin(), out.allowUnixSockets.end());
  out.allowUnixSockets.erase(std::unique(out.allowUnixSockets.begin(), out.allowUnixSockets.end()),
                             out.allowUnixSockets.end());
  out.allowAllUnixSockets = a.allowAllUnixSockets && b.allowAllUnixSockets;
  out.allowLocalBinding = a.allowLocalBinding && b.allowLocalBinding;
  return out;
}

std::optional<Widening> narrowing(const DerivedRules& base, const DerivedRules& candidate, RuleAxis axes) {
  using Check = std::optional<Widening> (*)(const DerivedRules&, const DerivedRules&);
  static constexpr std::pair<RuleAxis, Check> kChecks[] = {{RuleAxis::kRead, readAxis},
                                                           {RuleAxis::kWrite, writeAxis},
                                                           {RuleAxis::kNetwork, networkAxis},
                                                           {RuleAxis::kEnv, envAxis},
                                                           {RuleAxis::kLimits, limitsAxis}};
  for (auto [axis, check] : kChecks) {
    if ((static_cast<unsigned>(axes) & static_cast<unsigned>(axis)) == 0) continue;
    if (auto w = check(base, candidate)) return w;
  }
  return std::nullopt;
}

}  // namespace stockade
