#include "policy/git_hooks.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>

#include "policy/paths.h"

namespace stockade::policy {
namespace {

constexpr std::size_t kMaxConfigBytes = 1 << 20;
constexpr int kMaxIncludeDepth = 10;
constexpr std::size_t kMaxFiles = 64;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A config file's text, or "" (missing, unreadable, too large, not a file).
std::string readConfig(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return {};
  std::string out;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) <= kMaxConfigBytes) {
    out.resize(static_cast<std::size_t>(st.st_size));
    ssize_t n = ::read(fd, out.data(), out.size());
    out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  ::close(fd);
  return out;
}

std::string dirOf(const std::string& path) {
  std::size_t cut = path.rfind('/');
  return cut == 0 || cut == std::string::npos ? "/" : path.substr(0, cut);
}

// A path from a config value: "~/x" against home, relative against `base`.
// nullopt for what cannot be placed ("~user/x", "~" without a home).
std::optional<std::string> placeValue(const std::string& value, const std::string& home, const std::string& base) {
  if (value.empty()) return std::nullopt;
  if (value == "~" || value.starts_with("~/")) {
    if (home.empty() || home.front() != '/') return std::nullopt;
    return lexicallyNormal(home + value.substr(1));
  }
  if (value.front() == '~') return std::nullopt;
  if (value.front() == '/') return lexicallyNormal(value);
  if (base.empty()) return std::nullopt;
  return lexicallyNormal(base + "/" + value);
}

// A relative value as a name pattern: its components, "." and leading ".."
// dropped (the pattern holds at any depth, so wherever ".." led is covered).
std::string asNamePattern(const std::string& value) {
  std::string out;
  std::size_t i = 0;
  bool leading = true;
  while (i <= value.size()) {
    std::size_t j = value.find('/', i);
    if (j == std::string::npos) j = value.size();
    std::string part = value.substr(i, j - i);
    i = j + 1;
    if (part.empty() || part == ".") continue;
    if (part == ".." && leading) continue;
    leading = false;
    if (part == "..") {
      std::size_t cut = out.rfind('/');
      out = cut == std::string::npos ? "" : out.substr(0, cut);
      continue;
    }
    out += out.empty() ? part : "/" + part;
  }
  return out;
}

class Reader {
 public:
  Reader(std::string home, GitHooksPaths& out) : home_(std::move(home)), out_(out) {}

  // Reads `path` and its includes. `worktree`: where relative values point
  // ("" for the user's and system configs: they become name patterns).
  void read(const std::string& path, const std::string& worktree, int depth = 0) {
    if (depth > kMaxIncludeDepth || files_ >= kMaxFiles) return;
    ++files_;
    std::vector<std::string> includes, programs;
    // A program's path is placed as a hooks path is.
    auto place = [&](const std::string& value, std::vector<std::string>& paths) {
      if (!value.empty() && value.front() != '/' && value.front() != '~' && worktree.empty()) {
        if (auto name = asNamePattern(value); !name.empty()) out_.names.push_back(name);
      } else if (auto placed = placeValue(value, home_, worktree)) {
        paths.push_back(*placed);
      }
    };
    for (const auto& value : parseHooksPaths(readConfig(path), &includes, &programs)) place(value, out_.paths);
    for (const auto& value : programs) place(value, out_.programs);
    for (const auto& inc : includes)
      if (auto placed = placeValue(inc, home_, dirOf(path))) {
        out_.included.push_back(*placed);
        read(*placed, worktree, depth + 1);
      }
  }

 private:
  std::string home_;
  GitHooksPaths& out_;
  std::size_t files_ = 0;
};

bool isDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The git directory a ".git" file points at ("gitdir: PATH"), or "".
std::string gitfileTarget(const std::string& gitfile) {
  std::string text = readConfig(gitfile);
  if (!text.starts_with("gitdir:")) return {};
  std::string value = text.substr(7);
  value.erase(0, value.find_first_not_of(" \t"));
  value.erase(value.find_last_not_of(" \t\r\n") + 1);
  if (value.empty()) return {};
  return value.front() == '/' ? lexicallyNormal(value) : lexicallyNormal(dirOf(gitfile) + "/" + value);
}

bool isSymlink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// The symlinks among a git directory's hooks and config (bounded: the hooks
// directory holds a few dozen entries at most).
void addLinks(const std::string& gitdir, std::vector<std::string>& out) {
  constexpr std::size_t kMaxHooks = 256;
  for (const std::string& p : {gitdir + "/hooks", gitdir + "/config"})
    if (isSymlink(p)) out.push_back(lexicallyNormal(p));
  DIR* d = ::opendir((gitdir + "/hooks").c_str());
  std::size_t seen = 0;
  while (const dirent* e = d && seen++ < kMaxHooks ? ::readdir(d) : nullptr)
    if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN)
      if (const std::string p = gitdir + "/hooks/" + e->d_name; isSymlink(p)) out.push_back(lexicallyNormal(p));
  if (d) ::closedir(d);
}

// The keys whose value is a command git runs by itself (section, key; the
// subsection, as in diff.<driver>.textconv, is any).
constexpr std::pair<std::string_view, std::string_view> kProgramKeys[] = {
    {"core", "fsmonitor"},      {"core", "sshcommand"},     {"core", "pager"},
    {"core", "editor"},         {"core", "askpass"},        {"core", "alternaterefscommand"},
    {"sequence", "editor"},     {"diff", "external"},       {"diff", "textconv"},
    {"diff", "command"},        {"filter", "clean"},        {"filter", "smudge"},
    {"filter", "process"},      {"merge", "driver"},        {"credential", "helper"},
    {"gpg", "program"},         {"difftool", "cmd"},        {"mergetool", "cmd"},
    {"uploadpack", "packobjectshook"}, {"interactive", "difffilter"},
};

// The program a command value names by path (its first word, when it has a
// '/': a bare name is looked up in PATH), or nullopt. An alias runs one only
// as "!command"; every pager.<command> names one.
std::optional<std::string> programPath(const std::string& section, const std::string& key, const std::string& value) {
  std::string_view command = value;
  if (section == "alias") {
    if (!command.starts_with("!")) return std::nullopt;
    command.remove_prefix(1);
  } else if (section != "pager" && std::find(std::begin(kProgramKeys), std::end(kProgramKeys),
                                             std::pair<std::string_view, std::string_view>(section, key)) ==
                                       std::end(kProgramKeys)) {
    return std::nullopt;
  }
  if (section == "credential" && command.starts_with("!")) command.remove_prefix(1);
  const std::size_t start = command.find_first_not_of(" \t");
  if (start == std::string_view::npos) return std::nullopt;
  command.remove_prefix(start);
  std::string_view word = command.substr(0, command.find_first_of(" \t;|&"));
  if (word.find('/') == std::string_view::npos) return std::nullopt;
  return std::string(word);
}

}  // namespace

std::vector<std::string> parseHooksPaths(std::string_view text, std::vector<std::string>* includes,
                                         std::vector<std::string>* programs) {
  std::vector<std::string> out;
  std::string section;
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto skipSpace = [&] {
    while (i < n && isSpace(text[i])) ++i;
  };
  auto skipLine = [&] {
    while (i < n && text[i] != '\n') ++i;
  };
  while (i < n) {
    skipSpace();
    if (i >= n) break;
    char c = text[i];
    if (c == '\n') {
      ++i;
      continue;
    }
    if (c == '#' || c == ';') {
      skipLine();
      continue;
    }
    if (c == '[') {
      // [section], [section "subsection"], [section.subsection]
      ++i;
      std::size_t start = i;
      while (i < n && text[i] != ']' && text[i] != '"' && text[i] != '\n') ++i;
      std::string name = lower(text.substr(start, i - start));
      name.erase(name.find_last_not_of(" \t") + 1);
      if (i < n && text[i] == '"') {
        ++i;
        while (i < n && text[i] != '"' && text[i] != '\n') i += (text[i] == '\\' && i + 1 < n) ? 2 : 1;
        if (i < n && text[i] == '"') ++i;
        while (i < n && text[i] != ']' && text[i] != '\n') ++i;
      }
      if (i >= n || text[i] != ']') {
        section.clear();  // malformed: nothing in it counts
        skipLine();
        continue;
      }
      ++i;
      section = name.substr(0, name.find('.'));
      continue;  // a key may follow on the same line
    }
    // key [= value]
    std::size_t start = i;
    while (i < n && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '-')) ++i;
    std::string key = lower(text.substr(start, i - start));
    if (key.empty()) {
      skipLine();
      continue;
    }
    skipSpace();
    std::string value;
    if (i < n && text[i] == '=') {
      ++i;
      skipSpace();
      bool quoted = false;
      std::size_t kept = 0;  // length without trailing unquoted spaces
      while (i < n) {
        char v = text[i];
        if (v == '\n' && !quoted) break;
        if (v == '\n') break;  // an unterminated quote ends with the line
        if (!quoted && (v == '#' || v == ';')) {
          skipLine();
          break;
        }
        ++i;
        if (v == '"') {
          quoted = !quoted;
          kept = value.size();
          continue;
        }
        if (v == '\\' && i < n) {
          char e = text[i++];
          if (e == '\n') continue;  // a continued line
          if (e == '\r' && i < n && text[i] == '\n') {
            ++i;
            continue;
          }
          value += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'b' ? '\b' : e;
          kept = value.size();
          continue;
        }
        value += v;
        if (quoted || !isSpace(v)) kept = value.size();
      }
      value.resize(kept);
    }
    if (section == "core" && key == "hookspath") out.push_back(value);
    if (programs)
      if (auto path = programPath(section, key, value)) programs->push_back(std::move(*path));
    if ((section == "include" || section == "includeif") && key == "path" && includes) includes->push_back(value);
    skipLine();
  }
  return out;
}

GitHooksPaths gitHooksPaths(const std::string& home, const std::vector<std::string>& trees) {
  GitHooksPaths out;
  Reader(home, out).read("/etc/gitconfig", "");
  if (!home.empty() && home.front() == '/') {
    Reader(home, out).read(home + "/.gitconfig", "");
    Reader(home, out).read(home + "/.config/git/config", "");
  }
  std::vector<std::string> seen;
  // Directories already looked at from another tree: the walk on from there
  // was done (trees share most of their ancestors).
  std::set<std::string> examined;
  for (const auto& tree : trees) {
    // The repository that holds the tree: the nearest ".git" at or above it.
    for (std::string dir = tree;; dir = dirOf(dir)) {
      if (!examined.insert(dir).second) break;
      const std::string dotgit = dir == "/" ? "/.git" : dir + "/.git";
      std::string gitdir;
      struct stat st;
      if (::lstat(dotgit.c_str(), &st) == 0) gitdir = S_ISDIR(st.st_mode) ? dotgit : gitfileTarget(dotgit);
      if (!gitdir.empty() && isDirectory(gitdir)) {
        if (std::find(seen.begin(), seen.end(), gitdir) == seen.end()) {
          seen.push_back(gitdir);
          Reader reader(home, out);
          reader.read(gitdir + "/config", dir);
          reader.read(gitdir + "/config.worktree", dir);
          std::string common = readConfig(gitdir + "/commondir");
          common.erase(common.find_last_not_of(" \t\r\n") + 1);
          if (!common.empty())
            reader.read((common.front() == '/' ? common : gitdir + "/" + common) + "/config", dir);
          addLinks(common.empty() ? gitdir : common.front() == '/' ? common : gitdir + "/" + common, out.links);
        }
        break;
      }
      if (dir == "/") break;
    }
  }
  for (auto* list : {&out.paths, &out.names, &out.programs, &out.included, &out.links}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  return out;
}

}  // namespace stockade::policy
