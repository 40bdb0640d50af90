#include "policy/paths.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <set>
#include <cstdio>
#include <functional>

namespace stockade::policy {
namespace {

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string join(const std::string& dir, std::string_view name) {
  return dir == "/" ? "/" + std::string(name) : dir + "/" + std::string(name);
}

}  // namespace

std::string lexicallyNormal(std::string_view path) {
  std::vector<std::string_view> kept;
  for (std::string_view c : components(path)) {
    if (c == ".") continue;
    if (c == "..") {
      if (!kept.empty()) kept.pop_back();
      continue;
    }
    kept.push_back(c);
  }
  std::string out;
  for (std::string_view c : kept) {
    out += '/';
    out += c;
  }
  return out.empty() ? "/" : out;
}

bool isWithin(std::string_view path, std::string_view root) noexcept {
  if (root.size() == 1 && root[0] == '/') return true;
  // The component boundary first: it rejects most candidates without a memcmp.
  if (path.size() < root.size() || (path.size() > root.size() && path[root.size()] != '/')) return false;
  return path.substr(0, root.size()) == root;
}

const std::string* deepestContaining(const std::vector<std::string>& sorted, std::string_view path) noexcept {
  auto find = [&](std::string_view candidate) -> const std::string* {
    auto it = std::lower_bound(sorted.begin(), sorted.end(), candidate,
                               [](const std::string& e, std::string_view c) { return std::string_view(e) < c; });
    return it != sorted.end() && *it == candidate ? &*it : nullptr;
  };
  // The roots isWithin() accepts, longest first: `path` itself, each prefix
  // ending before a '/', "/" (which contains everything), and "" (which
  // contains an absolute path).
  if (const std::string* e = find(path)) return e;
  for (std::size_t i = path.size(); i-- > 1;)
    if (path[i] == '/')
      if (const std::string* e = find(path.substr(0, i))) return e;
  if (const std::string* e = find("/")) return e;
  return !path.empty() && path[0] == '/' ? find("") : nullptr;
}

const PathResolver::Entry& PathResolver::look(std::string_view path) {
  if (auto it = cache_.find(path); it != cache_.end()) return it->second;
  Entry e;
  std::string key(path);
  struct stat st {};
  if (::lstat(key.c_str(), &st) != 0) {
    e.kind = Entry::kMissing;  // ENOENT, ENOTDIR, EACCES: nothing further to follow
  } else if (S_ISLNK(st.st_mode)) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink(key.c_str(), buf, sizeof buf);
    if (n > 0) {
      e.kind = Entry::kSymlink;
      e.target.assign(buf, static_cast<std::size_t>(n));
    }
  } else {
    e.kind = Entry::kPresent;
    e.device = st.st_dev;
    e.inode = st.st_ino;
    e.links = st.st_nlink;
    e.regularFile = S_ISREG(st.st_mode);
  }
  return cache_.emplace(std::move(key), std::move(e)).first->second;
}

const PathResolver::Entry* PathResolver::seen(std::string_view realPath) const {
  auto it = cache_.find(realPath);
  return it == cache_.end() ? nullptr : &it->second;
}

namespace {

// Pops the next component off the front of `rest` ("" when none is left).
std::string_view nextComponent(std::string_view& rest) {
  std::size_t i = rest.find_first_not_of('/');
  if (i == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(i);
  std::size_t j = rest.find('/');
  std::string_view c = rest.substr(0, j);
  rest.remove_prefix(j == std::string_view::npos ? rest.size() : j);
  return c;
}

}  // namespace

std::optional<std::string> PathResolver::resolve(std::string_view path, std::vector<std::string>* links) {
  // A stack of texts still to walk: the path, then each symlink target spliced
  // in front of what remained. The views point into `path` or into cached
  // link targets (map nodes never move), so the walk allocates only `real`.
  // `..` is applied to the real prefix, as the kernel does.
  std::vector<std::string_view> pending{path};
  std::string real;
  real.reserve(path.size() + 32);
  int hops = 0;
  // Below a missing component nothing can be looked up; a ".." that climbs
  // back to where it went missing resumes the lookups.
  constexpr std::size_t kNotMissing = static_cast<std::size_t>(-1);
  std::size_t missingFrom = kNotMissing;  // length of `real` above the first missing component
  while (!pending.empty()) {
    std::string_view c = nextComponent(pending.back());
    if (pending.back().empty()) pending.pop_back();
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      real.resize(real.empty() ? 0 : real.rfind('/'));
      if (missingFrom != kNotMissing && real.size() <= missingFrom) missingFrom = kNotMissing;
      continue;
    }
    const std::size_t parentSize = real.size();
    real += '/';
    real += c;
    if (missingFrom != kNotMissing) continue;
    const Entry& e = look(real);
    if (e.kind != Entry::kSymlink) {
      if (e.kind == Entry::kMissing) missingFrom = parentSize;
      continue;
    }
    if (++hops > 40) return std::nullopt;
    if (links) links->push_back(real);
    real.resize(e.target.starts_with('/') ? 0 : parentSize);
    pending.push_back(e.target);
  }
  return real.empty() ? "/" : real;
}

namespace {

constexpr std::string_view kEscapable = "*?[]\\";

bool escapes(std::string_view text, std::size_t i) {
  return text[i] == '\\' && i + 1 < text.size() && kEscapable.find(text[i + 1]) != std::string_view::npos;
}

// A glob component for fnmatch(3), which reads every `\` as an escape: a
// lone one is doubled so that it stays an ordinary character.
std::string fnmatchPattern(std::string_view part) {
  std::string out;
  for (std::size_t i = 0; i < part.size(); ++i) {
    if (escapes(part, i)) {
      out += part.substr(i, 2);
      ++i;
    } else {
      if (part[i] == '\\') out += '\\';
      out += part[i];
    }
  }
  return out;
}

}  // namespace

bool hasGlob(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (escapes(text, i)) ++i;
    else if (text[i] == '*' || text[i] == '?' || text[i] == '[') return true;
  }
  return false;
}

std::string escapeGlob(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (kEscapable.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string unescapeGlob(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (escapes(text, i)) ++i;
    out += text[i];
  }
  return out;
}

NameSearch findNames(dev_t device, ino_t inode, const std::vector<std::string>& roots, std::size_t maxNames,
                     std::size_t maxVisited) {
  NameSearch out;
  std::set<std::pair<dev_t, ino_t>> seenDirs;
  std::deque<std::string> queue;
  auto enqueue = [&](const std::string& dir) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == device &&
        seenDirs.insert({st.st_dev, st.st_ino}).second)
      queue.push_back(dir);
  };
  for (const auto& root : roots) {
    enqueue(root);
    while (!queue.empty() && out.names.size() < maxNames) {
      std::string dir = std::move(queue.front());
      queue.pop_front();
      DIR* d = ::opendir(dir.c_str());
      if (!d) continue;
      while (dirent* e = ::readdir(d)) {
        std::string_view name = e->d_name;
        if (name == "." || name == "..") continue;
        if (++out.visited > maxVisited) {
          out.complete = false;
          ::closedir(d);
          return out;
        }
        struct stat st {};
        if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        std::string path = join(dir, name);
        if (S_ISDIR(st.st_mode)) {
          if (st.st_dev == device && seenDirs.insert({st.st_dev, st.st_ino}).second) queue.push_back(path);
        } else if (st.st_dev == device && st.st_ino == inode &&
                   std::find(out.names.begin(), out.names.end(), path) == out.names.end()) {
          out.names.push_back(path);
          if (out.names.size() >= maxNames) break;
        }
      }
      ::closedir(d);
    }
    queue.clear();
  }
  return out;
}

std::optional<std::vector<std::string>> expandGlob(std::string_view pattern, std::size_t maxVisited) {
  const std::string normal = lexicallyNormal(pattern);
  std::vector<std::string> parts;
  for (std::string_view c : components(normal)) parts.emplace_back(c);
  std::vector<std::string> matches;
  std::size_t visited = 0;
  bool exceeded = false;

  // Lists a directory's entries (names, whether each is a real directory).
  auto list = [&](const std::string& dir, const std::function<void(const std::string&, bool)>& each) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    while (dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      if (++visited > maxVisited) {
        exceeded = true;
        break;
      }
      bool isDir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st {};
        isDir = ::lstat(join(dir, name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      }
      each(std::string(name), isDir);
    }
    ::closedir(d);
  };

  std::function<void(const std::string&, std::size_t)> walk = [&](const std::string& dir, std::size_t i) {
    if (exceeded) return;
    if (i == parts.size()) {
      matches.push_back(dir);
      return;
    }
    const std::string& part = parts[i];
    if (part == "**") {
      walk(dir, i + 1);  // zero directories
      list(dir, [&](const std::string& name, bool isDir) {
        if (isDir) walk(join(dir, name), i);
      });
      return;
    }
    if (!hasGlob(part)) {
      std::string next = join(dir, unescapeGlob(part));
      struct stat st {};
      if (::lstat(next.c_str(), &st) == 0) walk(next, i + 1);
      return;
    }
    const std::string partPattern = fnmatchPattern(part);
    list(dir, [&](const std::string& name, bool isDir) {
      if (::fnmatch(partPattern.c_str(), name.c_str(), 0) != 0) return;
      if (i + 1 == parts.size() || isDir) walk(join(dir, name), i + 1);
    });
  };
  walk("/", 0);
  if (exceeded) return std::nullopt;
  std::sort(matches.begin(), matches.end());
  matches.erase(std::unique(matches.begin(), matches.end()), matches.end());
  return matches;
}

}  // namespace stockade::policy
