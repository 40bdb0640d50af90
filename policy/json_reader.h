// Reading untrusted JSON for policies and settings files: every problem of a
// text is collected with its JSON path (not only the first), duplicate keys
// are problems, and a number keeps the text it was written as, so a message
// can quote `18446744073709551616` rather than `1.8446744073709552e+19`.
// Nothing here throws out of readJson().
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stockade/policy.h"

namespace stockade::policy {

// Nesting depth of JSON text ({ and [ counted outside strings), without
// parsing it: untrusted text deeper than a bound is refused before a parser
// builds it, since a DOM that deep is serialised (and was destroyed) by
// recursion, and a million "[" would exhaust the stack.
int jsonNestingDepth(std::string_view text);

// The problems of one text, in the order they were found. Keeps the first
// kMaxProblems and counts the rest, so a hostile file of a million bad
// entries costs a bounded message.
class Problems {
 public:
  static constexpr std::size_t kMaxProblems = 50;

  void add(std::string path, std::string message);
  bool empty() const noexcept { return list_.empty(); }
  // The first problem, the others in PolicyError::more. Precondition: !empty().
  PolicyError error() const;

 private:
  std::vector<PolicyError> list_;
  std::size_t dropped_ = 0;
};

// "filesystem" + "denyRead" -> "filesystem.denyRead"; "" + "network" -> "network".
std::string memberPath(const std::string& parent, std::string_view key);
// "filesystem.denyRead" + 2 -> "filesystem.denyRead[2]".
std::string elementPath(const std::string& parent, std::size_t index);

// Objects keep their keys in document order, so problems and notes are
// reported in the order a reader of the file meets them.
using Json = nlohmann::ordered_json;

struct JsonDocument {
  Json root;
  // The text of every number that is not an integer of 64 bits (a fraction,
  // an exponent, or too large), by JSON path.
  std::map<std::string, std::string> numberText;
};

// Parses `text` (at most 1 MiB, nesting at most 16 deep). Duplicate keys are
// added to `problems` and parsing goes on; text that is not JSON adds one
// problem and returns nullopt.
std::optional<JsonDocument> readJson(std::string_view text, Problems& problems);

// "a string", "an array", ... for "must be X, not Y" messages. By the value's
// type, which nlohmann::json and ordered_json share (the daemon's bodies are
// the one, policies the other).
const char* jsonTypeName(nlohmann::json::value_t type) noexcept;
inline const char* jsonTypeName(const Json& value) noexcept { return jsonTypeName(value.type()); }

}  // namespace stockade::policy
