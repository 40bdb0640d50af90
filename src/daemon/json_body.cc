#include "src/daemon/json_body.h"

#include <algorithm>

#include "policy/json_reader.h"

namespace stockade::daemon {

using nlohmann::json;

namespace {

// Builds the DOM from SAX events, refusing duplicate keys and deep nesting.
// nlohmann's SAX parser is iterative, and so is this builder: the depth
// limit is for what later code does with the value, not for the parse.
class StrictBuilder {
 public:
  bool null() { return add(json(nullptr)); }
  bool boolean(bool v) { return add(json(v)); }
  bool number_integer(json::number_integer_t v) { return add(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return add(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return add(json(v)); }
  bool string(json::string_t& v) { return add(json(std::move(v))); }
  bool binary(json::binary_t&) { return refuse("binary values are not JSON"); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    if (stack_.back()->contains(k)) return refuse(quoteValue(k) + " appears twice in the same object; give each key once");
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    return refuse("not valid JSON: " + what);
  }

  json root;
  std::optional<std::string> error;

 private:
  bool refuse(std::string message) {
    if (!error) error = std::move(message);
    return false;
  }
  json* insert(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    return &(top[key_] = std::move(v));
  }
  bool add(json v) {
    insert(std::move(v));
    return true;
  }
  bool open(json v) {
    if (stack_.size() >= static_cast<std::size_t>(kMaxBodyDepth))
      return refuse("nests deeper than " + std::to_string(kMaxBodyDepth) + " levels");
    stack_.push_back(insert(std::move(v)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  std::vector<json*> stack_;
  std::string key_;
};

}  // namespace

std::variant<json, ApiError> parseJsonBody(std::string_view text) {
  StrictBuilder b;
  bool ok = false;
  try {
    ok = json::sax_parse(text.begin(), text.end(), &b, json::input_format_t::json, true);
  } catch (const std::exception& e) {
    // sax_parse reports syntax errors through parse_error(); anything else
    // (bad_alloc) is reported, not propagated.
    b.error = std::string("could not be read: ") + e.what();
  }
  if (!ok || b.error) return invalidArgument("body", b.error.value_or("not valid JSON"));
  return std::move(b.root);
}

const char* jsonTypeName(const json& v) noexcept { return policy::jsonTypeName(v.type()); }

FieldReader::FieldReader(const json& value, std::string where) : value_(value), where_(std::move(where)) {
  if (!value_.is_object())
    error_ = invalidArgument(where_.empty() ? "body" : where_,
                             std::string("must be a JSON object, not ") + jsonTypeName(value_));
}

std::string FieldReader::path(std::string_view key) const {
  if (where_.empty()) return std::string(key);
  return where_ + "." + std::string(key);
}

void FieldReader::fail(std::string_view key, std::string_view message) {
  if (!error_) error_ = invalidArgument(path(key), message);
}

bool FieldReader::has(std::string_view key) const { return value_.is_object() && value_.contains(key); }

const json* FieldReader::field(std::string_view key, json::value_t type, const char* typeName) {
  consumed_.emplace_back(key);
  if (!value_.is_object()) return nullptr;
  auto it = value_.find(key);
  if (it == value_.end()) return nullptr;
  bool ok = it->type() == type || (type == json::value_t::number_unsigned && it->is_number_integer());
  if (!ok) {
    fail(key, std::string("must be ") + typeName + ", not " + jsonTypeName(*it));
    return nullptr;
  }
  return &*it;
}

namespace {

bool hasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// A key as it appears in a field path: itself when it is plain printable
// ASCII, else quoted so that odd bytes are visible.
std::string keyText(std::string_view key) {
  bool plain = !key.empty() && key.size() <= 128;
  for (unsigned char c : key)
    if (c < 0x21 || c > 0x7e || c == '"' || c == '\\') plain = false;
  return plain ? std::string(key) : quoteValue(key);
}

}  // namespace

std::optional<std::string> FieldReader::string(std::string_view key) {
  const json* v = field(key, json::value_t::string, "a string");
  if (!v) return std::nullopt;
  const std::string& s = v->get_ref<const std::string&>();
  if (hasNul(s)) {
    fail(key, "contains a NUL byte");
    return std::nullopt;
  }
  return s;
}

std::optional<bool> FieldReader::boolean(std::string_view key) {
  const json* v = field(key, json::value_t::boolean, "true or false");
  if (!v) return std::nullopt;
  return v->get<bool>();
}

std::optional<std::uint64_t> FieldReader::integer(std::string_view key, std::uint64_t min, std::uint64_t max) {
  const json* v = field(key, json::value_t::number_unsigned, "a whole number");
  if (!v) return std::nullopt;
  if (v->is_number_integer() && !v->is_number_unsigned()) {
    fail(key, std::to_string(v->get<std::int64_t>()) + " is negative; give " + std::to_string(min) + " to " +
                  std::to_string(max));
    return std::nullopt;
  }
  std::uint64_t n = v->get<std::uint64_t>();
  if (n < min || n > max) {
    fail(key, std::to_string(n) + " is out of range; give " + std::to_string(min) + " to " + std::to_string(max));
    return std::nullopt;
  }
  return n;
}

std::optional<std::vector<std::string>> FieldReader::stringArray(std::string_view key) {
  const json* v = field(key, json::value_t::array, "an array of strings");
  if (!v) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(v->size());
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    std::string at = std::string(key) + "[" + std::to_string(i) + "]";
    if (!e.is_string()) {
      fail(at, std::string("must be a string, not ") + jsonTypeName(e));
      return std::nullopt;
    }
    if (hasNul(e.get_ref<const std::string&>())) {
      fail(at, "contains a NUL byte");
      return std::nullopt;
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::optional<std::map<std::string, std::string>> FieldReader::stringMap(std::string_view key) {
  const json* v = field(key, json::value_t::object, "an object of strings");
  if (!v) return std::nullopt;
  std::map<std::string, std::string> out;
  for (auto it = v->begin(); it != v->end(); ++it) {
    std::string at = std::string(key) + "." + keyText(it.key());
    if (!it->is_string()) {
      fail(at, std::string("must be a string, not ") + jsonTypeName(*it));
      return std::nullopt;
    }
    if (hasNul(it->get_ref<const std::string&>()) || hasNul(it.key())) {
      fail(at, "contains a NUL byte");
      return std::nullopt;
    }
    out.emplace(it.key(), it->get<std::string>());
  }
  return out;
}

const json* FieldReader::raw(std::string_view key) {
  consumed_.emplace_back(key);
  if (!value_.is_object()) return nullptr;
  auto it = value_.find(key);
  return it == value_.end() ? nullptr : &*it;
}

std::optional<std::string> FieldReader::oneOf(std::string_view key, std::initializer_list<std::string_view> choices) {
  auto v = string(key);
  if (!v) return std::nullopt;
  if (std::find(choices.begin(), choices.end(), *v) != choices.end()) return v;
  std::string list;
  for (auto c : choices) list += (list.empty() ? "\"" : ", \"") + std::string(c) + "\"";
  fail(key, quoteValue(*v) + " is not one of " + list);
  return std::nullopt;
}

std::optional<ApiError> FieldReader::finish() {
  if (!error_ && value_.is_object()) {
    for (auto it = value_.begin(); it != value_.end(); ++it) {
      if (std::find(consumed_.begin(), consumed_.end(), it.key()) == consumed_.end()) {
        std::string known;
        for (const auto& k : consumed_) known += (known.empty() ? "" : ", ") + k;
        fail(keyText(it.key()), "unknown field; " + (known.empty() ? std::string("this body takes no fields")
                                                          : "known fields are " + known));
        break;
      }
    }
  }
  return error_;
}

}  // namespace stockade::daemon
