// `stockade cp|ls|persist|restore|snapshot`: the workspace of a sandbox in a
// running stockaded (docs/api.md, "Workspace"). A sandbox path is written
// SANDBOX:PATH, PATH absolute beneath /workspace or relative to it.
//
// Files move as raw bytes, streamed both ways; directories as tar trees. A
// tree coming out of a sandbox is untrusted: it is extracted on the host by
// the workspace library's importer (stockade/workspace.h) into the target
// directory, as strictly as into a sandbox (no "..", no links out, no
// devices, no protected names such as .git/hooks), never by tar(1).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "src/cli/client.h"
#include "src/cli/commands.h"
#include "src/cli/help.h"
#include "src/cli/output.h"
#include "stockade/rules.h"
#include "stockade/workspace.h"

namespace stockade::cli {
namespace {

using nlohmann::json;

constexpr std::uint64_t kProgressFrom = 4u << 20;  // transfers over this show progress on a terminal

// SANDBOX:PATH. A host path holding a colon before any slash is written
// ./a:b. PATH relative to /workspace, "" for the workspace itself.
struct SandboxRef {
  std::string sandbox;
  std::string path;
};
std::optional<SandboxRef> sandboxRef(const std::string& arg) {
  auto colon = arg.find(':');
  if (colon == std::string::npos || colon == 0 || arg.substr(0, colon).find('/') != std::string::npos)
    return std::nullopt;
  std::string path = arg.substr(colon + 1);
  if (path.empty() || path == ".") path = "/workspace";
  else if (path.front() != '/') path = "/workspace/" + path;
  return SandboxRef{arg.substr(0, colon), path};
}

std::string target(const SandboxRef& r, std::string_view route) {
  return "/v1/sandboxes/" + r.sandbox + "/" + std::string(route) + "?path=" + urlEncode(r.path, "/");
}

std::string baseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// A host directory opened as a workspace: the importer and the exporter of
// the library, with rules that let them write only beneath it.
std::variant<Workspace, std::string> hostWorkspace(const std::string& given) {
  char real[PATH_MAX];
  if (!::realpath(given.c_str(), real)) return given + ": " + std::strerror(errno);
  const std::string dir = real;
  json policy{{"filesystem",
               {{"denyRead", json::array()},
                {"allowRead", json::array()},
                {"allowWrite", json::array({dir})},
                {"denyWrite", json::array()}}},
              {"network",
               {{"allowedDomains", json::array()},
                {"deniedDomains", json::array()},
                {"allowUnixSockets", json::array()},
                {"allowLocalBinding", false}}},
              {"env", {{"allow", json::array()}}},
              {"limits", {{"memoryBytes", 0}, {"pids", 0}, {"cpuSeconds", 0}, {"fileSizeBytes", 0}}}};
  auto parsed = SandboxPolicy::parse(policy.dump());
  if (auto* e = std::get_if<PolicyError>(&parsed)) return dir + ": " + e->text();
  auto derived = derive(std::get<SandboxPolicy>(parsed), currentContext());
  if (auto* e = std::get_if<PolicyError>(&derived)) return dir + ": " + e->text();
  WorkspaceOptions o;
  o.hostPath = dir;
  o.rules = [rules = std::get<DerivedRules>(std::move(derived))] { return rules; };
  auto opened = Workspace::open(std::move(o));
  if (auto* e = std::get_if<WorkspaceError>(&opened)) return e->message;
  return std::get<Workspace>(std::move(opened));
}

// "12.0 MiB / 100.0 MiB" on stderr, redrawn in place, when stdout is a terminal.
class Progress {
 public:
  Progress(std::string what, std::optional<std::uint64_t> total)
      : what_(std::move(what)), total_(total), on_(::isatty(STDOUT_FILENO) == 1) {}
  ~Progress() {
    if (shown_) printErr("\n");
  }
  void add(std::uint64_t n) {
    done_ += n;
    if (!on_ || done_ < kProgressFrom || done_ - last_ < (1u << 20)) return;
    last_ = done_;
    shown_ = true;
    char line[160];
    if (total_)
      std::snprintf(line, sizeof line, "%s: %.1f / %.1f MiB", what_.c_str(), done_ / 1048576.0, *total_ / 1048576.0);
    else
      std::snprintf(line, sizeof line, "%s: %.1f MiB", what_.c_str(), done_ / 1048576.0);
    printErrAsIs("\r");  // back to the line's start: stockade's own, not in the (escaped) line
    printErr(line);
  }

 private:
  std::string what_;
  std::optional<std::uint64_t> total_;
  bool on_;
  bool shown_ = false;
  std::uint64_t done_ = 0, last_ = 0;
};

int uploadFile(HttpClient& c, const std::string& src, SandboxRef dst, bool dstIsDir) {
  int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return reportFailure("cp", src + ": " + std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  if (dstIsDir) dst.path += "/" + baseName(src);
  Progress progress("stockade cp " + src, static_cast<std::uint64_t>(st.st_size));
  HttpResult r;
  try {
    r = c.upload("PUT", target(dst, "files"), "application/octet-stream", static_cast<std::uint64_t>(st.st_size),
                 [&](char* buf, std::size_t n) -> std::size_t {
                   ssize_t got = ::read(fd, buf, n);
                   if (got < 0) throw ClientError("read(\"" + src + "\") failed: " + std::strerror(errno));
                   progress.add(static_cast<std::uint64_t>(got));
                   return static_cast<std::size_t>(got);
                 });
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (r.status != 204) return reportError("cp " + src, r);
  return kExitOk;
}

int uploadTree(HttpClient& c, const std::string& src, const SandboxRef& dst) {
  auto ws = hostWorkspace(src);
  if (auto* e = std::get_if<std::string>(&ws)) return reportFailure("cp", *e);
  auto exported = std::get<Workspace>(ws).exportTree();
  if (auto* e = std::get_if<WorkspaceError>(&exported)) return reportFailure("cp", src + ": " + e->message);
  TreeExport& tree = std::get<TreeExport>(exported);
  Progress progress("stockade cp " + src, std::nullopt);
  HttpResult r = c.upload("PUT", target(dst, "tree"), "application/x-tar", std::nullopt,
                          [&](char* buf, std::size_t n) -> std::size_t {
                            auto got = tree.read(std::span<char>(buf, n));
                            if (auto* e = std::get_if<WorkspaceError>(&got)) throw ClientError(src + ": " + e->message);
                            progress.add(std::get<std::size_t>(got));
                            return std::get<std::size_t>(got);
                          });
  if (r.status != 204) return reportError("cp " + src, r);
  return kExitOk;
}

bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The tree at `src` extracted into the host directory `dst` (created),
// through the library's importer, fed by the reply as it arrives.
int downloadTree(HttpClient& c, const SandboxRef& src, const std::string& dst) {
  bool created = ::mkdir(dst.c_str(), 0755) == 0;
  if (!created && errno != EEXIST) return reportFailure("cp", dst + ": " + std::strerror(errno));
  // A refused tree leaves no trace: the directory made for it goes too.
  struct Undo {
    const std::string& dir;
    bool armed;
    ~Undo() {
      if (armed) ::rmdir(dir.c_str());
    }
  } undo{dst, created};
  auto ws = hostWorkspace(dst);
  if (auto* e = std::get_if<std::string>(&ws)) return reportFailure("cp", *e);
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) return reportFailure("cp", std::string("pipe2: ") + std::strerror(errno));
  struct PipeSource final : ByteSource {
    int fd;
    explicit PipeSource(int f) : fd(f) {}
    WorkspaceResult<std::size_t> read(std::span<char> buf) override {
      for (;;) {
        ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return WorkspaceError{WorkspaceErrorCode::kUnavailable, std::string("read: ") + std::strerror(errno)};
        return static_cast<std::size_t>(n);
      }
    }
  };
  WorkspaceStatus imported;
  std::thread importer([&, readFd = pipeFds[0]] {
    PipeSource source(readFd);
    imported = std::get<Workspace>(ws).importTree(source);
    ::close(readFd);  // a refusal stops the download (the writer gets EPIPE)
  });
  Progress progress("stockade cp " + src.sandbox + ":" + src.path, std::nullopt);
  HttpResult r;
  try {
    r = c.stream("GET", target(src, "tree"), {}, [&](std::string_view piece) {
      progress.add(piece.size());
      return writeAll(pipeFds[1], piece);
    });
  } catch (...) {
    ::close(pipeFds[1]);
    importer.join();
    throw;
  }
  ::close(pipeFds[1]);
  importer.join();
  if (r.status != 200) return reportError("cp " + src.sandbox + ":" + src.path, r);
  if (imported) return reportFailure("cp " + src.sandbox + ":" + src.path, dst + ": " + imported->message);
  undo.armed = false;
  return kExitOk;
}

int download(HttpClient& c, const SandboxRef& src, std::string dst) {
  struct stat st {};
  bool dstIsDir = ::stat(dst.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  std::string file = dstIsDir ? dst + "/" + baseName(src.path) : dst;
  std::string temp = file + ".stockade-cp-" + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return reportFailure("cp", temp + ": " + std::strerror(errno));
  bool writeFailed = false;
  Progress progress("stockade cp " + src.sandbox + ":" + src.path, std::nullopt);
  HttpResult r;
  try {
    r = c.stream("GET", target(src, "files"), {}, [&](std::string_view piece) {
      progress.add(piece.size());
      if (writeAll(fd, piece)) return true;
      writeFailed = true;
      return false;
    });
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  ::close(fd);
  if (r.status == 200 && !writeFailed) {
    if (::rename(temp.c_str(), file.c_str()) != 0) {
      ::unlink(temp.c_str());
      return reportFailure("cp", "rename to " + file + ": " + std::strerror(errno));
    }
    return kExitOk;
  }
  ::unlink(temp.c_str());
  if (writeFailed) return reportFailure("cp", temp + ": write failed: " + std::strerror(errno));
  // A directory comes as a tree.
  auto j = json::parse(r.body, nullptr, false);
  if (r.status == 409 && j.is_object() && j.value("code", "") == "is_directory")
    return downloadTree(c, src, dstIsDir ? dst + "/" + baseName(src.path) : dst);
  return reportError("cp " + src.sandbox + ":" + src.path, r);
}

int cpCommand(const ParsedArgs& a, HttpClient& c) {
  if (a.positionals.size() != 2) return usageError("cp", "give a source and a destination, one of them SANDBOX:PATH");
  auto from = sandboxRef(a.positionals[0]), to = sandboxRef(a.positionals[1]);
  if (from.has_value() == to.has_value())
    return usageError("cp", "exactly one of the two must be SANDBOX:PATH (the other a host path; ./a:b for one with a colon)");
  if (to) {
    const std::string& src = a.positionals[0];
    struct stat st {};
    if (::stat(src.c_str(), &st) != 0) return reportFailure("cp", src + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) return uploadTree(c, src, *to);
    if (!S_ISREG(st.st_mode)) return reportFailure("cp", src + ": not a regular file or a directory");
    // Into a directory of the sandbox when the destination says so.
    bool dstIsDir = a.positionals[1].ends_with("/") || to->path == "/workspace";
    if (!dstIsDir) {
      HttpResult r = c.request("GET", target(*to, "files/list"));
      dstIsDir = r.status == 200;
    }
    return uploadFile(c, src, *to, dstIsDir);
  }
  return download(c, *from, a.positionals[1]);
}

int lsCommand(const ParsedArgs& a, HttpClient& c, bool asJson) {
  if (a.positionals.size() != 1) return usageError("ls", "give SANDBOX or SANDBOX:PATH");
  std::string arg = a.positionals[0];
  auto ref = sandboxRef(arg.find(':') == std::string::npos ? arg + ":" : arg);
  if (!ref) return usageError("ls", "give SANDBOX or SANDBOX:PATH");
  HttpResult r = c.request("GET", target(*ref, "files/list"));
  if (r.status != 200) return reportError("ls " + arg, r);
  if (asJson) {
    printOut(r.body + "\n");
    return kExitOk;
  }
  std::string out;
  const json listing = json::parse(r.body);
  for (const auto& e : listing["items"]) {
    std::string type = e.value("type", "");
    out += printable(type + std::string(type.size() < 8 ? 8 - type.size() : 1, ' ') + e.value("name", "") +
                     (type == "dir" ? "/" : "") + "\n");
  }
  printOut(out);
  return kExitOk;
}

std::optional<std::uint64_t> seconds(const ParsedArgs& a, std::string& error) {
  auto v = a.value("timeout");
  if (!v) return std::nullopt;
  bool ok = !v->empty() && v->size() <= 5;
  for (char ch : *v) ok = ok && ch >= '0' && ch <= '9';
  if (!ok || std::stoul(*v) == 0 || std::stoul(*v) > 86400) {
    error = "--timeout " + *v + ": give whole seconds from 1 to 86400";
    return std::nullopt;
  }
  return std::stoul(*v);
}

int persistOrRestore(const std::string& command, const ParsedArgs& a, HttpClient& c, bool asJson) {
  if (a.positionals.size() != 2) return usageError(command, "give SANDBOX and PATH (a directory beneath /workspace)");
  auto ref = sandboxRef(a.positionals[0] + ":" + a.positionals[1]);
  if (!ref) return usageError(command, "give SANDBOX and PATH");
  json body{{"path", ref->path}};
  std::string error;
  if (auto t = seconds(a, error)) body["timeout"] = *t;
  if (!error.empty()) return usageError(command, error);
  if (command == "persist" && !a.values("exclude").empty()) body["exclude"] = a.values("exclude");
  HttpResult r = c.request("POST", "/v1/sandboxes/" + ref->sandbox + "/" + command, body.dump());
  if (r.status != 200) return reportError(command + " " + ref->path, r);
  if (asJson) {
    printOut(r.body + "\n");
    return kExitOk;
  }
  json j = json::parse(r.body);
  if (command == "restore" && !j.value("restored", false)) {
    printErr("stockade restore: no checkpoint of " + ref->path + " to restore (" + j.value("reason", "") + ")\n");
    return kExitDaemonError;
  }
  printOut(std::string(command == "persist" ? "persisted " : "restored ") + ref->path + ": " +
           std::to_string(j.value("size", 0)) + " bytes, sha256 " + j.value("sha256", "") + "\n");
  return kExitOk;
}

int snapshotCommand(const ParsedArgs& a, HttpClient& c, bool asJson) {
  HttpResult r;
  if (auto lookup = a.value("lookup")) {
    if (!a.positionals.empty()) return usageError("snapshot", "--lookup KEY takes no SANDBOX");
    r = c.request("GET", "/v1/snapshots?operationKey=" + urlEncode(*lookup));
  } else {
    if (a.positionals.size() != 1) return usageError("snapshot", "give SANDBOX (or --lookup KEY)");
    std::string key;
    if (auto k = a.value("key")) {
      key = *k;
    } else {
      std::random_device rd;
      char buf[40];
      std::snprintf(buf, sizeof buf, "cli-%08x%08x", rd(), rd());
      key = buf;
    }
    r = c.request("POST", "/v1/sandboxes/" + a.positionals[0] + "/snapshots", json{{"operationKey", key}}.dump());
  }
  if (r.status != 200) return reportError("snapshot", r);
  if (asJson) {
    printOut(r.body + "\n");
    return kExitOk;
  }
  json j = json::parse(r.body);
  printOut(j.value("id", "") + "\n");
  printErr("stockade snapshot: " + j.value("operationKey", "") + ", " + std::to_string(j.value("size", 0)) +
           " bytes, sha256 " + j.value("sha256", "") + ", " + std::to_string(j.value("frozenProcesses", 0)) +
           " processes frozen (" + j.value("freezeMethod", "") + ")\n");
  return kExitOk;
}

}  // namespace

int workspaceCommand(const std::string& command, const std::vector<std::string>& args) {
  return runDaemonCommand(command, args,
                          {[](const ParsedArgs& a) -> std::optional<std::string> {
                             if (!a.rest.empty()) return "unexpected arguments after --";
                             return std::nullopt;
                           },
                           [&](const ParsedArgs& a, ClientSetup& s) {
                             // A refused tree import closes its pipe: the write then fails, never kills.
                             ::signal(SIGPIPE, SIG_IGN);
                             if (command == "cp") return cpCommand(a, *s.client);
                             if (command == "ls") return lsCommand(a, *s.client, s.json);
                             if (command == "snapshot") return snapshotCommand(a, *s.client, s.json);
                             return persistOrRestore(command, a, *s.client, s.json);
                           }});
}

}  // namespace stockade::cli
