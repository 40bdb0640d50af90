#include "policy/json_reader.h"

#include <algorithm>

namespace stockade::policy {
namespace {

using json = Json;

constexpr std::size_t kMaxBytes = 1 << 20;
constexpr int kMaxDepth = 16;

}  // namespace

int jsonNestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') inString = false;
      continue;
    }
    if (c == '"') inString = true;
    else if (c == '{' || c == '[') deepest = std::max(deepest, ++depth);
    else if (c == '}' || c == ']') --depth;
  }
  return deepest;
}

namespace {

// Builds the DOM from SAX events, keeping the JSON path of the value being
// read, so that a duplicate key and a number's text are recorded where they are.
class DomBuilder {
 public:
  DomBuilder(JsonDocument& doc, Problems& problems) : doc_(doc), problems_(problems) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const json::string_t& text) {
    doc_.numberText[valuePath()] = text;
    return put(v);
  }
  bool string(json::string_t& v) { return put(std::move(v)); }
  bool binary(json::binary_t& v) { return put(std::move(v)); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    Frame& f = stack_.back();
    if (f.value->contains(k))
      problems_.add(memberPath(f.path, k), "appears twice in the same object; give each key once");
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    problems_.add("", "not valid JSON: " + what);
    failed_ = true;
    return false;
  }
  bool failed() const noexcept { return failed_; }

 private:
  struct Frame {
    json* value;
    std::string path;
    std::string key;  // objects: the member being read
  };

  // The path of the value about to be put.
  std::string valuePath() const {
    if (stack_.empty()) return "";
    const Frame& f = stack_.back();
    return f.value->is_object() ? memberPath(f.path, f.key) : elementPath(f.path, f.value->size());
  }
  json* slot() {
    if (stack_.empty()) return &doc_.root;
    Frame& f = stack_.back();
    if (f.value->is_object()) return &(*f.value)[f.key];
    f.value->push_back(nullptr);
    return &f.value->back();
  }
  bool put(json v) {
    *slot() = std::move(v);
    return true;
  }
  bool open(json empty) {
    std::string path = valuePath();
    json* s = slot();
    *s = std::move(empty);
    stack_.push_back({s, std::move(path), {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  JsonDocument& doc_;
  Problems& problems_;
  std::vector<Frame> stack_;
  bool failed_ = false;
};

}  // namespace

void Problems::add(std::string path, std::string message) {
  if (list_.size() >= kMaxProblems) {
    ++dropped_;
    return;
  }
  list_.push_back({std::move(path), std::move(message), {}});
}

PolicyError Problems::error() const {
  PolicyError out = list_.front();
  out.more.assign(list_.begin() + 1, list_.end());
  if (dropped_ > 0)
    out.more.push_back({"", std::to_string(dropped_) + " more problems not shown; fix these first", {}});
  return out;
}

std::string memberPath(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string elementPath(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::optional<JsonDocument> readJson(std::string_view text, Problems& problems) {
  if (text.size() > kMaxBytes) {
    problems.add("", "is larger than 1 MiB");
    return std::nullopt;
  }
  if (jsonNestingDepth(text) > kMaxDepth) {
    problems.add("", "nests deeper than 16 levels");
    return std::nullopt;
  }
  JsonDocument doc;
  DomBuilder builder(doc, problems);
  try {
    json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const std::exception& e) {  // allocation failure: never out of here
    problems.add("", std::string("could not be read: ") + e.what());
    return std::nullopt;
  }
  if (builder.failed()) return std::nullopt;
  return doc;
}

const char* jsonTypeName(nlohmann::json::value_t type) noexcept {
  using T = nlohmann::json::value_t;
  switch (type) {
    case T::null: return "null";
    case T::boolean: return "a boolean";
    case T::string: return "a string";
    case T::array: return "an array";
    case T::object: return "an object";
    case T::number_float: return "a fractional number";
    case T::number_integer:
    case T::number_unsigned: return "a number";
    default: return "an unsupported value";
  }
}

}  // namespace stockade::policy
