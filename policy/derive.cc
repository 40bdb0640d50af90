// derive(): SandboxPolicy + the live filesystem -> DerivedRules.
// Only stat/lstat/readlink, glob expansion and git's config files: no
// process, mount or socket calls, and no walk of a writable tree -- what is
// protected there is decided by name at each write (protected_names.h), so
// derivation costs the same in an empty workspace and in one of 100,000
// directories.
#include <pwd.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "policy/domain.h"
#include "policy/git_hooks.h"
#include "policy/paths.h"
#include "policy/protected_names.h"
#include "policy/text.h"
#include "policy/rules_builder.h"

namespace stockade {
namespace {

constexpr std::size_t kMaxGlobEntries = 1'000'000;
// Entries looked at to name the other links of a read-denied file.
constexpr std::size_t kMaxLinkSearch = 200'000;

struct DeriveFailure {
  PolicyError error;
};

class Deriver {
 public:
  Deriver(const SandboxPolicy& policy, const DeriveContext& ctx) : policy_(policy), ctx_(ctx) {}

  DerivedRules run() {
    const auto& fs = policy_.filesystem();
    for (std::size_t i = 0; i < fs.denyRead.size(); ++i) {
      std::size_t before = b_.fs.denyRead.size();
      addEntry(fs.denyRead[i], {"filesystem.denyRead", i}, b_.fs.denyRead, b_.fs.denyReadPatterns, Links::kBoth);
      for (std::size_t j = before; j < b_.fs.denyRead.size(); ++j) deniedBy_.emplace(b_.fs.denyRead[j], Where{"filesystem.denyRead", i});
    }
    for (std::size_t i = 0; i < fs.allowRead.size(); ++i)
      addEntry(fs.allowRead[i], {"filesystem.allowRead", i}, b_.fs.allowRead, b_.fs.allowReadPatterns, Links::kCarveOut);
    b_.fs.allowWrite = resolveAll(fs.allowWrite, "filesystem.allowWrite");
    b_.fs.allowWriteSystemPaths = fs.allowWriteSystemPaths;
    if (!fs.allowWriteSystemPaths) refuseSystemPaths(fs.allowWrite, b_.fs.allowWrite);
    refuseHiddenWrites(fs.allowWrite, b_.fs.allowWrite);
    checkHardLinks();
    for (std::size_t i = 0; i < fs.denyWrite.size(); ++i) {
      std::size_t before = b_.fs.denyWrite.size();
      addEntry(fs.denyWrite[i], {"filesystem.denyWrite", i}, b_.fs.denyWrite, b_.fs.denyWritePatterns, Links::kBoth);
      for (std::size_t j = before; j < b_.fs.denyWrite.size(); ++j)
        writeDeniedBy_.emplace(b_.fs.denyWrite[j], Where{"filesystem.denyWrite", i});
    }
    b_.fs.defaultWrite = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"};
    if (ctx_.tmpdir) b_.fs.defaultWrite.push_back(resolve(*ctx_.tmpdir, {"context.tmpdir"}));
    protectWhatGitRuns();
    refuseDeadWrites(fs.allowWrite, b_.fs.allowWrite);

    const auto& net = policy_.network();
    b_.net.allowedDomains = domains(net.allowedDomains, policy::DomainUse::kAllow);
    b_.net.deniedDomains = domains(net.deniedDomains, policy::DomainUse::kDeny);
    b_.net.allowUnixSockets = resolveAll(net.allowUnixSockets, "network.allowUnixSockets");
    b_.net.allowAllUnixSockets = net.allowAllUnixSockets;
    b_.net.allowLocalBinding = net.allowLocalBinding;
    b_.env = policy_.env().allow;
    b_.limits = policy_.limits();
    return std::move(b_).build();
  }

 private:
  // Where a value came from; spelt out only when something fails.
  struct Where {
    const char* field;
    std::size_t index = kNoIndex;
    static constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);
    std::string text() const {
      return index == kNoIndex ? field : std::string(field) + "[" + std::to_string(index) + "]";
    }
  };

  [[noreturn]] static void fail(const Where& where, std::string message) {
    throw DeriveFailure{{where.text(), std::move(message)}};
  }

  // What the caller calls the working directory ("--cwd", "\"workspace\"").
  std::string cwdName() const { return ctx_.cwdName.empty() ? "DeriveContext::cwd" : ctx_.cwdName; }

  // `~` and relative forms made absolute. Not lexically normalised: "link/.."
  // must be resolved the kernel's way, by the PathResolver.
  std::string absolute(const std::string& p, const Where& where) const {
    std::string out;
    if (p == "~" || p.starts_with("~/")) {
      if (ctx_.home.empty() || ctx_.home.front() != '/')
        fail(where, policy::quote(p) + " uses \"~\" but no home directory is known; set HOME or write the full path");
      out = ctx_.home + p.substr(1);
    } else if (p.front() == '/') {
      out = p;
    } else {
      if (!ctx_.cwd || ctx_.cwd->empty() || ctx_.cwd->front() != '/')
        fail(where, policy::quote(p) + " is relative and no working directory was given; give one (" + cwdName() +
                        ") or write an absolute path");
      out = *ctx_.cwd + "/" + p;
    }
    return out;
  }

  // `links`, when given, receives every symlink followed on the way.
  std::string resolve(const std::string& p, const Where& where, std::vector<std::string>* links = nullptr) {
    auto real = resolver_.resolve(absolute(p, where), links);
    if (!real) fail(where, policy::quote(p) + " runs into a symlink loop; fix or remove the link");
    return *real;
  }

  // Entries of lists that take no globs; a literal name arrives escaped.
  std::vector<std::string> resolveAll(const std::vector<std::string>& list, const char* field) {
    std::vector<std::string> out;
    out.reserve(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) out.push_back(resolve(policy::unescapeGlob(list[i]), {field, i}));
    return out;
  }

  // An entry as the policy wrote it, and its real path when that differs.
  static std::string asWrittenAndReal(const std::string& written, const std::string& real) {
    return written == real ? policy::quote(real) : policy::quote(written) + " (" + policy::quote(real) + ")";
  }

  // A writable tree inside a read-denied one (and not carved back out) would
  // be masked with it: the rules would claim writable what the child cannot
  // even see. Refused, naming both.
  void refuseHiddenWrites(const std::vector<std::string>& written, const std::vector<std::string>& real) {
    auto deepest = [](const std::vector<std::string>& list, const std::string& path) -> const std::string* {
      const std::string* best = nullptr;
      for (const auto& e : list)
        if (policy::isWithin(path, e) && (!best || e.size() > best->size())) best = &e;
      return best;
    };
    for (std::size_t i = 0; i < real.size(); ++i) {
      const std::string* deny = deepest(b_.fs.denyRead, real[i]);
      if (!deny) continue;
      const std::string* allow = deepest(b_.fs.allowRead, real[i]);
      if (allow && allow->size() > deny->size()) continue;
      const std::string named = asWrittenAndReal(written[i], real[i]);
      fail({"filesystem.allowWrite", i},
           named + " lies inside the read-denied " + policy::quote(*deny) +
               " (filesystem.denyRead): a child cannot write what it cannot see. Add it to filesystem.allowRead "
               "as well, or drop it");
    }
  }

  // A writable tree that a write deny covers as a whole -- inside (or at) a
  // denyWrite entry or one of its glob's matches, a path stockade protects
  // (what git runs), or a protected name -- is one the child can write
  // nothing in: every write there is refused, since the denies win. The
  // rules would claim writable what is not. Refused, naming both, like the
  // writable tree inside a read-denied one: every rule is checked, whichever
  // list it came from.
  void refuseDeadWrites(const std::vector<std::string>& written, const std::vector<std::string>& real) {
    const policy::ProtectedNameMatcher names(b_.fs.protectedNames);
    for (std::size_t i = 0; i < real.size(); ++i) {
      const std::string named = asWrittenAndReal(written[i], real[i]);
      std::string why;
      for (const auto& d : b_.fs.denyWrite)
        if (why.empty() && policy::isWithin(real[i], d)) {
          auto by = writeDeniedBy_.find(d);
          why = (d == real[i] ? "is the write-denied " : "lies inside the write-denied ") + policy::quote(d) + " (" +
                (by == writeDeniedBy_.end() ? std::string("filesystem.denyWrite") : by->second.text()) + ")";
        }
      for (const auto& m : b_.fs.mandatoryDenyWrite)
        if (why.empty() && policy::isWithin(real[i], m))
          why = (m == real[i] ? "is " : "lies inside ") + policy::quote(m) +
                ", which stockade never lets a child write (git runs or reads it)";
      struct stat st {};
      const bool directory = ::lstat(real[i].c_str(), &st) != 0 || S_ISDIR(st.st_mode);  // missing: a tree to come
      if (why.empty())
        if (const ProtectedName* p = names.protecting(real[i], directory)) {
          const std::string_view reason = policy::protectedNameReason(*p);
          why = "is protected as a whole by the protected name " + policy::quote(p->pattern) +
                (reason.empty() ? std::string() : " (" + std::string(reason) + ")");
        }
      if (why.empty()) continue;
      fail({"filesystem.allowWrite", i}, named + " " + why +
                                             ": a write deny wins over allowWrite, so the child could write nothing "
                                             "there. Drop the entry (or the deny that covers it)");
    }
  }

  // A writable "/", system tree or home directory is almost always an
  // accident (the default policy's "." run from /etc or from $HOME): refused
  // unless the policy opts in by name. Judged by name, and then by object: a
  // directory that is one of those under another name (a bind mount, or the
  // host's "/" mounted at "/host" in a container) is judged as that one.
  // The home directories are $HOME and every account's (context.accounts):
  // "/home" holds them all, whoever runs stockade.
  void refuseSystemPaths(const std::vector<std::string>& written, const std::vector<std::string>& real) {
    const std::vector<Home> homes = homeDirectories();
    auto judge = [&](const std::string& r) -> std::string {
      if (r == "/") return "the whole filesystem";
      if (std::string tree = systemTree(r); !tree.empty())
        return r == tree ? "the system directory " + policy::quote(tree) : "inside the system directory " + policy::quote(tree);
      for (const auto& h : homes) {
        if (!policy::isWithin(h.path, r)) continue;
        if (h.account.empty())
          return r == h.path ? "the home directory itself" : "a directory holding the home directory " + policy::quote(h.path);
        return r == h.path ? "the home directory of the account " + policy::quote(h.account)
                           : "a directory holding the home directory " + policy::quote(h.path) + " of the account " +
                                 policy::quote(h.account);
      }
      return "";
    };
    for (std::size_t i = 0; i < real.size(); ++i) {
      const std::string& r = real[i];
      std::string what = judge(r);
      std::string named = written[i] == r ? policy::quote(r) : policy::quote(written[i]) + " (" + policy::quote(r) + ")";
      if (!what.empty()) {
        named = written[i] == r ? named + " is" : policy::quote(written[i]) + " resolves to " + policy::quote(r) + ",";
      } else {
        const std::optional<std::string> same = sameAs(r, homes);
        if (!same || (what = judge(*same)).empty()) continue;
        named += " is " + policy::quote(*same) + " under another name (the same directory, mounted twice),";
      }
      fail({"filesystem.allowWrite", i},
           named + " " + what + ": a child could change the host itself. Name a narrower directory (for \".\", "
                                "a project directory as the working directory, " + cwdName() + "), or set "
                                "\"filesystem.allowWriteSystemPaths\": true to allow it on purpose");
    }
  }

  // A home directory, real: $HOME (account empty) or an account's.
  struct Home {
    std::string path;
    std::string account;
  };
  std::vector<Home> homeDirectories() {
    std::vector<Home> out;
    if (!ctx_.home.empty() && ctx_.home.front() == '/') out.push_back({resolve(ctx_.home, {"context.home"}), ""});
    if (ctx_.accounts.empty()) return out;
    FILE* db = std::fopen(ctx_.accounts.c_str(), "re");
    if (!db) return out;  // no account database: only $HOME is known
    passwd entry{};
    char buf[4096];
    for (passwd* pw = nullptr; ::fgetpwent_r(db, &entry, buf, sizeof buf, &pw) == 0 && pw;) {  // (fgetpwent: not thread-safe)
      if (!pw->pw_dir || pw->pw_dir[0] != '/' || std::string_view(pw->pw_dir) == "/") continue;
      const auto real = resolver_.resolve(pw->pw_dir);
      struct stat st {};
      if (!real || *real == "/" || ::stat(real->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      if (std::none_of(out.begin(), out.end(), [&](const Home& h) { return h.path == *real; }))
        out.push_back({*real, pw->pw_name ? pw->pw_name : ""});
    }
    std::fclose(db);
    return out;
  }

  // The parent of a real path other than "/".
  static std::string parentDir(const std::string& p) {
    const std::size_t slash = p.rfind('/');
    return slash == 0 ? "/" : p.substr(0, slash);
  }

  // A directory refuseSystemPaths() judges by name, as an object: "/", the
  // system trees, the home directories and their ancestors.
  struct Object {
    std::string path;  // real
    dev_t device;
    ino_t inode;
  };
  std::vector<Object> systemObjects(const std::vector<Home>& homes) {
    std::vector<std::string> paths = {"/",    "/etc",  "/usr",  "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                      "/libx32", "/boot", "/dev", "/proc", "/sys", "/var", "/run", "/opt"};
    for (const auto& home : homes)
      for (std::string h = home.path; h != "/"; h = parentDir(h))
        if (std::find(paths.begin(), paths.end(), h) == paths.end()) paths.push_back(h);
    std::vector<Object> out;
    for (const auto& p : paths) {
      const auto realPath = resolver_.resolve(p);
      struct stat st {};
      if (realPath && ::lstat(realPath->c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        out.push_back({*realPath, st.st_dev, st.st_ino});
    }
    return out;
  }
  // The path `real` names under another name: its deepest ancestor (or
  // itself) that is one of `objects` by device and inode but not by name,
  // with the rest of `real` appended. A directory is another's under a
  // second name only through a mount (directories have no hard links), and
  // the parent of every object is one too ("/", or an ancestor of the home):
  // only the ancestors that are the root of a mount need comparing.
  std::optional<std::string> sameAs(const std::string& real, const std::vector<Home>& homes) {
    for (std::string a = real; a != "/"; a = parentDir(a)) {
      if (!walked_.insert(a).second) break;  // it and its ancestors are no other name (or derive() failed)
      struct statx st {};
      if (::statx(AT_FDCWD, a.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE | STATX_INO, &st) != 0 ||
          !S_ISDIR(st.stx_mode))
        continue;
      // Linux 5.8 reports STATX_ATTR_MOUNT_ROOT; before, every ancestor is compared.
      if ((st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && !(st.stx_attributes & STATX_ATTR_MOUNT_ROOT)) continue;
      if (!systemObjects_) systemObjects_ = systemObjects(homes);
      const dev_t device = makedev(st.stx_dev_major, st.stx_dev_minor);
      for (const auto& o : *systemObjects_) {
        if (o.path == a || o.device != device || o.inode != st.stx_ino) continue;
        const std::string rest = real.substr(a.size());
        return o.path == "/" ? (rest.empty() ? "/" : rest) : o.path + rest;
      }
    }
    return std::nullopt;
  }
  std::optional<std::vector<Object>> systemObjects_;  // looked at once per derive(), when a mount root is met
  std::set<std::string, std::less<>> walked_;          // the ancestors sameAs() has compared

  // The system tree a real path lies in ("/etc", "/lib64"), or "".
  static std::string systemTree(std::string_view path) {
    // /opt: add-on software packages, run by the host's users like /usr's.
    constexpr std::array<std::string_view, 10> kTrees = {"etc", "usr", "bin", "sbin", "boot", "dev", "proc", "sys", "run", "opt"};
    std::string_view top = path.substr(1, path.find('/', 1) - 1);
    if (std::find(kTrees.begin(), kTrees.end(), top) != kTrees.end() || top.starts_with("lib"))
      return "/" + std::string(top);
    if (top == "var" && !policy::isWithin(path, "/var/tmp")) return "/var";
    return "";
  }

  // What a symlink stands for.
  enum class Links {
    kBoth,  // a deny: a glob match that is a link gives the link and the object it names
    // A carve-out: a glob match that is a link gives neither (it would open
    // an object the pattern does not name); a path named through links keeps
    // them beside its real path, since inside a read-denied tree ("/lib64"
    // under a denied "/") it is reachable as written only if they show too.
    kCarveOut,
  };

  // A path goes to `paths` resolved; a glob, to `patterns` as written (made
  // absolute) and its matches on disk now to `paths`.
  void addEntry(const std::string& p, const Where& where, std::vector<std::string>& paths,
                std::vector<std::string>& patterns, Links links) {
    if (!policy::hasGlob(p)) {
      std::vector<std::string> traversed;
      const std::string written = policy::unescapeGlob(p);
      std::string real = resolve(written, where, &traversed);
      if (std::string via = processLink(policy::lexicallyNormal(absolute(written, where)), real, traversed); !via.empty())
        fail(where, policy::quote(p) + " resolves through " + policy::quote(via) + " to " + policy::quote(real) +
                        ", a path of whichever process reads it (here stockade itself), not the sandbox's: every process "
                        "in the sandbox has its own /proc/<pid>, which no rule can take from it. Deny \"/proc\" as a "
                        "whole (the sandbox's own /proc), or drop the entry");
      paths.push_back(std::move(real));
      if (links == Links::kCarveOut) paths.insert(paths.end(), traversed.begin(), traversed.end());
      return;
    }
    std::string pattern = policy::lexicallyNormal(absolute(p, where));
    patterns.push_back(pattern);
    auto matches = policy::expandGlob(pattern, kMaxGlobEntries);
    if (!matches)
      fail(where, policy::quote(p) + " had to examine more than 1000000 entries; start the pattern in a narrower directory");
    for (const auto& m : *matches) {
      std::vector<std::string> traversed;
      auto real = resolver_.resolve(m, &traversed);
      if (real && *real != m) {
        if (links == Links::kCarveOut) continue;
        // A match that is a link into /proc/<pid> ("/etc/mtab"): the link is
        // masked; its object is the deriving process's, nothing of the sandbox's.
        if (processLink(m, *real, traversed).empty()) paths.push_back(*real);
      }
      paths.push_back(m);
    }
  }

  // The link through which a path (`written`, absolute and lexically normal)
  // reached a process's own directory /proc/<pid> -- /proc/self,
  // /proc/thread-self, and the links into them (/proc/mounts, /proc/net,
  // /etc/mtab, /dev/fd) -- or one of its magic links (/proc/1/root), or ""
  // when it did not. Resolved here, such a path names the deriving process's
  // files (or what its links point at), not the sandbox's.
  static std::string processLink(const std::string& written, const std::string& real,
                                 const std::vector<std::string>& traversed) {
    auto processDir = [](std::string_view path) -> std::string_view {
      if (!path.starts_with("/proc/")) return {};
      const std::string_view rest = path.substr(6), pid = rest.substr(0, rest.find('/'));
      const bool isPid = !pid.empty() && std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; });
      return isPid || pid == "self" || pid == "thread-self" ? path.substr(0, 6 + pid.size()) : std::string_view();
    };
    for (const auto& link : traversed)
      if (!processDir(link).empty()) return link;
    const std::string_view dir = processDir(real);
    if (!dir.empty() && !policy::isWithin(written, dir)) return traversed.empty() ? std::string(dir) : traversed.front();
    return "";
  }

  // A mask hides a path, not the object: a read-denied file with another name
  // that is not denied too would stay readable under that name. Refuse it,
  // naming the other names (searched for where they are likeliest: beside the
  // denied name, in the working directory, the writable trees and the home,
  // then the whole file system, within a budget).
  void checkHardLinks() {
    std::map<std::pair<dev_t, ino_t>, std::set<std::string>> deniedNames;  // distinct names per object
    for (const auto& p : b_.fs.denyRead) {
      const auto* e = resolver_.seen(p);
      if (e && e->regularFile && e->links > 1) deniedNames[{e->device, e->inode}].insert(p);
    }
    for (const auto& [object, names] : deniedNames) {
      const std::string& first = *names.begin();
      const auto* e = resolver_.seen(first);
      if (names.size() >= e->links) continue;
      std::vector<std::string> roots;
      for (const auto& n : names) roots.push_back(n.substr(0, std::max<std::size_t>(n.rfind('/'), 1)));
      if (ctx_.cwd) roots.push_back(*ctx_.cwd);
      roots.insert(roots.end(), b_.fs.allowWrite.begin(), b_.fs.allowWrite.end());
      if (!ctx_.home.empty()) roots.push_back(ctx_.home);
      roots.push_back("/");
      const std::size_t undenied = e->links - names.size();
      policy::NameSearch found = policy::findNames(object.first, object.second, roots, e->links, kMaxLinkSearch);
      std::vector<std::string> others;
      for (const auto& n : found.names)
        if (!names.count(n)) others.push_back(policy::quote(n));
      std::string message = policy::quote(first) + " has " + std::to_string(e->links) + " hard links and only " +
                            std::to_string(names.size()) + " of them " + (names.size() == 1 ? "is" : "are") +
                            " denied, so the file stays readable under ";
      if (others.empty()) {
        message += "its other " + std::string(undenied == 1 ? "name" : "names") + ", which " +
                   (found.complete ? "are in directories stockade cannot list"
                                   : "a search of " + std::to_string(found.visited) + " entries did not reach") +
                   " (find them with: find / -xdev -inum " + std::to_string(object.second) + ")";
      } else {
        for (std::size_t i = 0; i < others.size(); ++i) message += (i == 0 ? "" : ", ") + others[i];
        if (others.size() < undenied) message += " and " + std::to_string(undenied - others.size()) + " more";
      }
      message += ". Deny every name too, or remove the extra links";
      fail(deniedBy_.count(first) ? deniedBy_.at(first) : Where{"filesystem.denyRead"}, message);
    }
  }

  std::vector<DomainRule> domains(const std::vector<std::string>& list, policy::DomainUse use) const {
    std::vector<DomainRule> out;
    for (const auto& text : list) {
      // Already validated by the parser; a failure here is an internal bug.
      auto parsed = policy::parseDomainPattern(text, use);
      out.push_back(std::get<DomainRule>(parsed));
    }
    return out;
  }

  // The protected names (the table), the hooks directories git's
  // configuration names (core.hooksPath): a relative one in the user's or
  // system config is a name at any depth, any other a path; and the files
  // those configs include that lie in a writable tree. A path is protected as
  // named and as what it resolves to: a symlink at the name could otherwise
  // be replaced by a file the program wrote.
  void protectWhatGitRuns() {
    b_.fs.protectedNames = policy::tableProtectedNames();
    std::vector<std::string> trees = b_.fs.allowWrite;
    trees.insert(trees.end(), b_.fs.defaultWrite.begin(), b_.fs.defaultWrite.end());
    auto git = policy::gitHooksPaths(ctx_.home, trees);
    for (auto& name : git.names) b_.fs.protectedNames.push_back({std::move(name), false});
    auto inTree = [&](const std::string& p) {
      return std::any_of(trees.begin(), trees.end(), [&](const std::string& t) { return policy::isWithin(p, t); });
    };
    bool treesOnly = false;
    auto add = [&](const std::string& p) {
      if (treesOnly && !inTree(p)) return;
      if (std::find(b_.fs.mandatoryDenyWrite.begin(), b_.fs.mandatoryDenyWrite.end(), p) ==
          b_.fs.mandatoryDenyWrite.end())
        b_.fs.mandatoryDenyWrite.push_back(p);
    };
    // `path`, unless it is protected by name already, what it resolves to,
    // and every symlink on the way there.
    auto protect = [&](const std::string& path, bool named = false) {
      std::vector<std::string> links;
      auto real = resolver_.resolve(path, &links);
      if (!named) add(path);
      add(real.value_or(path));
      for (const auto& link : links)
        if (link != path) add(link);
    };
    for (const auto& path : git.paths) protect(path);
    // What lies in a writable tree, of: a program git runs (one elsewhere,
    // /usr/bin/less, is not the program's to write anyway); a hook or config
    // that is a symlink (made on the host: the broker refuses to make one
    // there), which leads to what git runs; an included file.
    treesOnly = true;
    for (const auto& path : git.programs) protect(path);
    for (const auto& link : git.links) protect(link, true);
    for (const auto& path : git.included) protect(path);
  }

  const SandboxPolicy& policy_;
  const DeriveContext& ctx_;
  RulesBuilder b_;
  policy::PathResolver resolver_;  // one consistent look at the filesystem per derive()
  std::map<std::string, Where> deniedBy_;  // each read-denied path: the entry it came from
  std::map<std::string, Where> writeDeniedBy_;  // each write-denied path: the entry it came from
};

}  // namespace

DeriveResult derive(const SandboxPolicy& policy, const DeriveContext& context) {
  try {
    return Deriver(policy, context).run();
  } catch (const DeriveFailure& f) {
    return f.error;
  }
}

DeriveContext currentContext() {
  DeriveContext ctx;
  if (const char* home = ::getenv("HOME"); home && *home == '/') {
    ctx.home = home;
  } else if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) {
    ctx.home = pw->pw_dir;
  }
  char buf[4096];
  if (::getcwd(buf, sizeof buf)) ctx.cwd = buf;
  return ctx;
}

}  // namespace stockade
