#include "policy/drift.h"

#include <sys/stat.h>

#include <algorithm>

#include "policy/text.h"

namespace stockade::policy {
std::optional<FileIdentity> identityOf(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino};
}

DriftBaseline::DriftBaseline(DerivedRules rules, const DriftBaseline* previous) : rules_(std::move(rules)) {
  for (const auto& path : rules_.filesystem().denyRead) {
    if (previous) {
      if (auto it = previous->denied_.find(path); it != previous->denied_.end()) {
        denied_.emplace(path, it->second);
        continue;
      }
    }
    if (auto id = identityOf(path)) denied_.emplace(path, *id);
  }
}

std::optional<Widening> DriftBaseline::check(const DerivedRules& now) const {
  for (const auto& [path, id] : denied_) {
    auto current = identityOf(path);
    if (!current || *current != id) {
      std::string why = current ? "was replaced by another object since admission"
                                : "was moved or deleted since admission; its contents may be readable under another name";
      return Widening{"filesystem.denyRead", path,
                      "filesystem.denyRead: " + quote(path) + " " + why + "; create the sandbox again to admit the change"};
    }
  }
  return narrowing(rules_, now);
}

}  // namespace stockade::policy
