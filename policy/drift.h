// Drift: has the world under an admitted policy changed so that re-deriving
// it now gives wider rules than were admitted?
//
// Two things can widen without any API call:
//  - a path in the policy resolves differently (a writable directory replaced
//    by a symlink to /etc): re-derived rules compare wider (narrowing());
//  - a read-denied object moves (renamed out of ~/.ssh): its path still reads
//    "denied", but the object is now readable under another name. Admission
//    records the identity (device, inode) of every denied object that exists;
//    an object that is gone or replaced is drift.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

#include "stockade/rules.h"

namespace stockade::policy {

struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

// The identity of the object at `path` itself (lstat: a symlink is its own
// object), nullopt when there is none.
std::optional<FileIdentity> identityOf(const std::string& path);

// What a drift check compares against: the rules in force and the identity
// of every read-denied object they name that existed when they were admitted.
class DriftBaseline {
 public:
  // Records `rules`; identities already known from `previous` (the baseline
  // being narrowed) are kept as first seen, so a move between admission and
  // a narrowing is still caught.
  explicit DriftBaseline(DerivedRules rules, const DriftBaseline* previous = nullptr);

  const DerivedRules& rules() const noexcept { return rules_; }

  // The first widening of `now` (freshly derived from the same policy) over
  // this baseline, or nullopt.
  std::optional<Widening> check(const DerivedRules& now) const;

 private:
  DerivedRules rules_;
  std::map<std::string, FileIdentity> denied_;
};

}  // namespace stockade::policy
