// THE access decision of the workspace API: whether the sandbox may read or
// write an object, asked for every object the host reads or writes on the
// sandbox's behalf, with the object's real host path (the path of the fd the
// kernel resolved, so a symlink inside the workspace is judged by what it
// names). Pure: no system call.
//
// Writes go through writeRefusal() and nowhere else: the write broker's
// decision (policy/write_decision.h: operation + resolved names + rules ->
// verdict, protected names judged by the object's kind), so the API refuses
// what the sandbox's broker would (but a bare repository recognised by its
// contents: the decision is asked without them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/write_decision.h"
#include "stockade/rules.h"

namespace stockade::workspace {

enum class WriteOp {
  kCreate,   // a new object at the name (upload, mkdir, an archive entry)
  kReplace,  // an object replaced at the name (upload over a file, an archive entry over one)
  kModify,   // metadata of an existing object changes (an archive's mode for an existing directory)
  kRemove,   // the name goes away (remove)
};
enum class ObjectKind { kDirectory, kOther, kSymlink };  // a symlink at a name redirects what lies beneath it

class AccessRules {
 public:
  explicit AccessRules(DerivedRules rules);

  // nullopt: the sandbox may read the object at `realPath` (absolute,
  // lexically normal). Otherwise the rule that denies it: readable() of the
  // rules, and -- stricter than the masks of a running sandbox, which cover
  // only the matches that existed when it started -- any denyRead glob that
  // matches the path or one of its directories, unless an allowRead entry
  // carves it out.
  std::optional<std::string> readRefusal(std::string_view realPath) const;

  // nullopt: the sandbox may do `op` to an object of `kind` at `realPath`.
  // A read-denied path is refused too (the sandbox sees it masked,
  // read-only). Otherwise the rule that refuses it (`filesystem.denyWrite "/w/.env"`,
  // `mandatory deny "/w/.git/hooks"`, `not inside any filesystem.allowWrite
  // path`).
  std::optional<std::string> writeRefusal(std::string_view realPath, WriteOp op, ObjectKind kind) const;

  // limits.fileSizeBytes (0: none): the sandbox cannot make a larger file.
  std::uint64_t fileSizeLimit() const noexcept { return rules_.limits().fileSizeBytes; }

 private:
  DerivedRules rules_;
  policy::WriteRules writes_;  // the broker's decision over rules_
  std::vector<std::vector<std::string>> denyPatterns_;  // denyReadPatterns split into components
};

// Pure: true when the absolute glob `pattern` (components: fnmatch(3)
// patterns, "**" for any number of directories) matches the absolute path
// `path` exactly.
bool globMatches(std::string_view pattern, std::string_view path);

}  // namespace stockade::workspace
