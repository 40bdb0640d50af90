// Strict JSON for request bodies, and typed reads of an object's fields that
// name the field in every error. Pure; never throws on bad input.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/daemon/api_error.h"

namespace stockade::daemon {

inline constexpr int kMaxBodyDepth = 32;

// Parses `text` as one JSON value: a duplicate key in an object, nesting
// deeper than kMaxBodyDepth, invalid UTF-8 or trailing bytes are errors
// (400 invalid_argument). Iterative: no input can exhaust the stack.
std::variant<nlohmann::json, ApiError> parseJsonBody(std::string_view text);

// Reads the fields of one JSON object. Each getter returns nullopt when the
// field is absent or wrong; the first problem is kept (error()) and names
// the field by its JSON path (`prefix.key`). finish() reports a field no
// getter asked for: unknown fields are errors, never ignored.
class FieldReader {
 public:
  // `where` names the object in messages: "" for the body, "policy", "env".
  FieldReader(const nlohmann::json& value, std::string where);

  bool has(std::string_view key) const;
  std::optional<std::string> string(std::string_view key);
  std::optional<bool> boolean(std::string_view key);
  // A whole number in [min, max].
  std::optional<std::uint64_t> integer(std::string_view key, std::uint64_t min, std::uint64_t max);
  std::optional<std::vector<std::string>> stringArray(std::string_view key);
  std::optional<std::map<std::string, std::string>> stringMap(std::string_view key);
  // The field's raw value (any type), for a nested document such as a policy.
  const nlohmann::json* raw(std::string_view key);
  // One of `choices`.
  std::optional<std::string> oneOf(std::string_view key, std::initializer_list<std::string_view> choices);

  // Records a problem found by the caller (the first one wins).
  void fail(std::string_view key, std::string_view message);
  // The path of a field: "env", "policy.network" ...
  std::string path(std::string_view key) const;

  // Checks for unknown fields; returns the first problem, if any.
  std::optional<ApiError> finish();

 private:
  const nlohmann::json* field(std::string_view key, nlohmann::json::value_t type, const char* typeName);
  const nlohmann::json& value_;
  std::string where_;
  std::vector<std::string> consumed_;
  std::optional<ApiError> error_;
};

// The JSON type of a value for messages: "a string", "an array", ...
const char* jsonTypeName(const nlohmann::json& v) noexcept;

}  // namespace stockade::daemon
