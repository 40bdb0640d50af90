// The host's file API (issue 13) against a workspace the sandboxed program
// prepares. The program plants symlinks that lead out, or swaps a directory
// for one while the host works; the host side is the library's Workspace
// (stockade/workspace.h, what the daemon's file routes call), opened on the
// same directory with the rules of the runner's policy. The runner checks
// that home and outside are unchanged; the host checks here add what came
// back to the host: no secret in a download or an export, every operation
// through a link that leads out refused as invalid_path.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "stockade/policy.h"
#include "stockade/rules.h"
#include "stockade/workspace.h"
#include "tests/security/redteam/redteam.h"
#include "tests/support/read_file.h"
#include "tests/support/tar_builder.h"
#include "tests/support/workspace_results.h"

namespace stockade::redteam {
namespace {

using testing::codeOf;

// A Workspace on the case's workspace, judged by the runner's policy.
WorkspaceResult<Workspace> hostWorkspace(const HostContext& h) {
  auto derived = derive(SandboxPolicy::fromJson(h.policy), {.home = h.home, .cwd = h.ws, .tmpdir = std::nullopt});
  if (auto* e = std::get_if<PolicyError>(&derived)) return WorkspaceError{.message = "derive: " + e->text()};
  auto rules = std::make_shared<DerivedRules>(std::get<DerivedRules>(std::move(derived)));
  return Workspace::open({.hostPath = h.ws, .rules = [rules] { return *rules; }});
}

// Inside: ws/inner-link -> README (the host's allowed neighbour), then each
// of `links` (target, name in ws). nullopt when all were made.
std::optional<Verdict> plantLinks(const Context& c, const std::vector<std::pair<std::string, std::string>>& links) {
  if (auto n = neighbour(::symlink("README", (c.ws + "/inner-link").c_str()) == 0, "a symlink inside the workspace"))
    return *n;
  for (const auto& [target, name] : links)
    if (::symlink(target.c_str(), (c.ws + "/" + name).c_str()) != 0)
      return unproven("symlink(" + name + "): " + errnoName(errno));
  return std::nullopt;
}

// The host's side of a check: the workspace opened with the runner's rules,
// the secret, and home and outside as they were before the host's calls.
struct HostView {
  std::optional<Workspace> ws;
  std::string secret;
  std::map<std::string, std::string> home, outside;
  std::string failure;   // set when the host could not look
  std::string problems;  // what came back other than invalid_path
  void expectInvalidPath(const std::string& what, const std::string& code) {
    if (code != "invalid_path") problems += what + ": " + code + " (want invalid_path); ";
  }
};
HostView lookAsHost(HostContext& h, const std::string& neighbourPath) {
  HostView v;
  auto opened = hostWorkspace(h);
  if (auto* e = std::get_if<WorkspaceError>(&opened)) {
    v.failure = "the host could not open the workspace: " + e->message;
    return v;
  }
  v.ws.emplace(std::get<Workspace>(std::move(opened)));
  v.secret = testing::readWholeFile(h.home + "/.ssh/id_ed25519");
  if (v.secret.empty()) v.failure = "the host could not read its own copy of the secret";
  v.home = listing(h.home);
  v.outside = listing(h.outside);
  auto inner = v.ws->download(neighbourPath);
  if (auto* got = std::get_if<std::string>(&inner); !got || *got != "WORKSPACE-README\n")
    v.failure = "the host's allowed neighbour failed: download(" + neighbourPath + "): " + codeOf(inner);
  return v;
}

// After the host's calls: the whole export holds no secret, home and
// outside are as they were. Empty when so.
std::string hostAfter(HostContext& h, HostView& v) {
  testing::StringSink whole;
  if (auto e = v.ws->exportTree(whole)) return "the host's allowed neighbour failed: exportTree(/workspace): " + e->message;
  if (whole.out.find(v.secret) != std::string::npos) return "exportTree(/workspace) holds the secret";
  if (listing(h.home) != v.home) return "the host's calls changed home";
  if (listing(h.outside) != v.outside) return "the host's calls changed outside";
  return {};
}

// Inside: links out of the workspace for the host to follow, beside one
// that stays inside.
Verdict plantedSymlink(const Context& c) {
  if (auto u = plantLinks(c, {
                                 {c.home + "/.ssh/id_ed25519", "leak"},  // absolute, to the secret
                                 {"../home/.ssh/id_ed25519", "leak-rel"},
                                 {c.outside, "outdir"},  // absolute, to a directory outside
                                 {"../outside", "outdir-rel"},
                             }))
    return *u;
  return held("planted ws/leak, ws/leak-rel -> ~/.ssh/id_ed25519 and ws/outdir, ws/outdir-rel -> outside");
}

// Host: every operation through the planted links is invalid_path, and
// nothing the host gets back holds the secret.
std::string plantedSymlinkHost(HostContext& h) {
  HostView v = lookAsHost(h, "/workspace/inner-link");
  if (!v.failure.empty()) return v.failure;
  Workspace& ws = *v.ws;
  const std::string& secret = v.secret;
  std::string& problems = v.problems;
  auto expect = [&](const std::string& what, const std::string& code) { v.expectInvalidPath(what, code); };
  for (const char* leak : {"/workspace/leak", "/workspace/leak-rel"}) {
    auto r = ws.download(leak);
    if (auto* got = std::get_if<std::string>(&r); got && got->find(secret) != std::string::npos)
      return std::string("download(") + leak + ") returned the secret";
    expect(std::string("download(") + leak + ")", codeOf(r));
  }
  for (const std::string dir : {"/workspace/outdir", "/workspace/outdir-rel"}) {
    expect("list(" + dir + ")", codeOf(ws.list(dir)));
    expect("download(" + dir + "/target.txt)", codeOf(ws.download(dir + "/target.txt")));
    expect("exists(" + dir + "/target.txt)", codeOf(ws.exists(dir + "/target.txt")));
    expect("upload(" + dir + "/target.txt)", codeOf(ws.upload(dir + "/target.txt", "HOST-UPLOAD\n")));
    expect("upload(" + dir + "/new.txt)", codeOf(ws.upload(dir + "/new.txt", "HOST-UPLOAD\n")));
    expect("makeDir(" + dir + "/new)", codeOf(ws.makeDir(dir + "/new")));
    expect("remove(" + dir + "/target.txt)", codeOf(ws.remove(dir + "/target.txt")));
    expect("watch(" + dir + ")", codeOf(ws.watch(dir, true)));
    testing::StringSink sink;
    expect("exportTree(" + dir + ")", codeOf(ws.exportTree(sink, dir)));
    testing::TarBuilder tar;
    tar.file("target.txt", "HOST-IMPORT\n").end();
    MemorySource source(tar.bytes());
    expect("importTree(into " + dir + ")", codeOf(ws.importTree(source, dir)));
  }
  // An archive whose file lands beneath a planted link: the link is an
  // existing non-directory at one of the archive's names, so the archive's
  // directory replaces it (or the import is refused); never followed.
  testing::TarBuilder through;
  through.file("outdir-rel/target.txt", "HOST-IMPORT\n").end();
  MemorySource source(through.bytes());
  if (auto e = ws.importTree(source); !e) {
    std::error_code ec;
    if (std::filesystem::is_symlink(h.ws + "/outdir-rel", ec) ||
        testing::readWholeFile(h.ws + "/outdir-rel/target.txt") != "HOST-IMPORT\n")
      problems += "importTree(outdir-rel/target.txt) succeeded without replacing the link by its directory; ";
  }

  testing::StringSink whole;
  if (auto e = ws.exportTree(whole)) return "the host's allowed neighbour failed: exportTree(/workspace): " + e->message;
  if (whole.out.find("WORKSPACE-README") == std::string::npos) return "exportTree(/workspace) lacks README's content";
  // remove() of a link removes the link, never what it names.
  if (auto e = ws.remove("/workspace/leak")) problems += "remove(/workspace/leak): " + std::string(e->codeName()) + "; ";
  if (auto after = hostAfter(h, v); !after.empty()) return after;
  return problems;
}

// The host uploads and downloads /workspace/swap/target.txt in a loop while
// the program swaps the directory ws/swap with a symlink to outside
// (renameat2 RENAME_EXCHANGE: the name always exists), as in the
// symlink-exchange attack on `docker cp` (CVE-2018-15664).
struct Racer {
  std::atomic<bool> stop{false};
  std::atomic<long> done{0}, refused{0}, failed{0};
  std::string leaked;  // what escaped, if anything (written by the racing thread only)
  std::map<std::string, std::string> outside;  // before the race
  std::thread thread;
  ~Racer() {
    stop = true;
    if (thread.joinable()) thread.join();
  }
};
std::unique_ptr<Racer>& racer() {
  static std::unique_ptr<Racer> r;
  return r;
}

constexpr const char* kSeenFile = "race-seen";  // the host saw both states: the program may stop

void swappedParentSetup(HostContext& h) {
  std::filesystem::create_directories(h.ws + "/swap");
  std::ofstream(h.ws + "/swap/target.txt") << "INSIDE-ORIGINAL\n";
  auto opened = hostWorkspace(h);
  auto& r = racer();
  r = std::make_unique<Racer>();
  r->outside = listing(h.outside);
  if (auto* e = std::get_if<WorkspaceError>(&opened)) {
    r->leaked = "the host could not open the workspace: " + e->message;
    return;
  }
  r->thread = std::thread([r = r.get(), ws = std::get<Workspace>(std::move(opened)), seen = h.ws + "/" + kSeenFile]() mutable {
    bool told = false;
    for (long i = 0; !r->stop; ++i) {
      std::string body = "HOST-UPLOAD-" + std::to_string(i) + "\n";
      auto count = [&](const std::string& code) {
        if (code == "ok") ++r->done;
        else if (code == "invalid_path") ++r->refused;
        else ++r->failed;
      };
      count(codeOf(ws.upload("/workspace/swap/target.txt", body)));
      auto got = ws.download("/workspace/swap/target.txt");
      if (auto* bytes = std::get_if<std::string>(&got); bytes && bytes->find("OUTSIDE") != std::string::npos)
        r->leaked = "download(/workspace/swap/target.txt) read outside/target.txt";
      count(codeOf(got));
      if (!told && r->done >= 50 && r->refused >= 50) {  // renamed into place: the program never reads it half written
        std::ofstream(seen + ".new") << r->done << " done, " << r->refused << " refused\n";
        std::filesystem::rename(seen + ".new", seen);
        told = true;
      }
    }
  });
}

Verdict swappedParent(const Context& c) {
  const std::string swap = c.ws + "/swap", seen = c.ws + "/" + kSeenFile;
  const std::string partners[] = {c.ws + "/swap.rel", c.ws + "/swap.abs"};
  if (auto n = neighbour(::symlink("../outside", partners[0].c_str()) == 0 &&
                             ::symlink(c.outside.c_str(), partners[1].c_str()) == 0,
                         "symlinks inside the workspace"))
    return *n;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  long swaps = 0;
  while (::access(seen.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 64; ++i) {
      const std::string& partner = partners[i / 2 % 2];
      if (::syscall(SYS_renameat2, AT_FDCWD, swap.c_str(), AT_FDCWD, partner.c_str(), 2 /* RENAME_EXCHANGE */) != 0)
        return unproven("renameat2(RENAME_EXCHANGE): " + errnoName(errno));
      ++swaps;
    }
  }
  std::string host = readFile(seen);
  if (host.empty())
    return unproven("the host never saw both the directory and the link in " + std::to_string(swaps) + " swaps");
  if (host.back() == '\n') host.pop_back();
  return held(std::to_string(swaps) + " swaps while the host uploaded and downloaded (" + host + ")");
}

std::string swappedParentHost(HostContext& h) {
  auto& r = racer();
  if (!r) return "the racer never started";
  r->stop = true;
  if (r->thread.joinable()) r->thread.join();
  std::string leaked = r->leaked;
  long done = r->done, failed = r->failed;
  const bool outsideChanged = listing(h.outside) != r->outside;
  r.reset();
  if (!leaked.empty()) return leaked;
  if (outsideChanged) return "outside changed during the race";
  // The neighbour: uploads landed in the directory, wherever it was.
  std::string landed;
  for (const char* dir : {"/swap", "/swap.rel", "/swap.abs"}) landed += testing::readWholeFile(h.ws + dir + "/target.txt");
  if (done == 0 || landed.find("HOST-UPLOAD-") == std::string::npos)
    return "the host's allowed neighbour failed: no upload landed in ws/swap (" + std::to_string(failed) + " failed)";
  return {};
}

// Inside: links through /proc, whose magic links name the sandbox's (or the
// runner's) root and cwd: absolute, so never followed by the host, and
// RESOLVE_NO_MAGICLINKS refuses a magic link met on the way.
Verdict procRootLinks(const Context& c) {
  if (auto u = plantLinks(c, {
                                 {"/proc/self/root" + c.outside, "proc-self-root"},
                                 {"/proc/" + std::to_string(c.hostPid) + "/root" + c.home + "/.ssh/id_ed25519",
                                  "proc-host-root"},
                                 {"/proc/self/cwd/../outside", "proc-self-cwd"},
                                 {"/proc/thread-self/root" + c.home, "proc-thread-root"},
                             }))
    return *u;
  return held("planted ws/proc-* -> /proc/{self,thread-self,<runner>}/{root,cwd}/... for the host");
}

std::string procRootLinksHost(HostContext& h) {
  HostView v = lookAsHost(h, "/workspace/inner-link");
  if (!v.failure.empty()) return v.failure;
  for (const char* link : {"proc-self-root", "proc-host-root", "proc-self-cwd", "proc-thread-root"}) {
    const std::string p = std::string("/workspace/") + link;
    auto r = v.ws->download(p);
    if (auto* got = std::get_if<std::string>(&r); got && got->find(v.secret) != std::string::npos)
      return "download(" + p + ") returned the secret";
    v.expectInvalidPath("download(" + p + ")", codeOf(r));
    v.expectInvalidPath("list(" + p + ")", codeOf(v.ws->list(p)));
    v.expectInvalidPath("download(" + p + "/target.txt)", codeOf(v.ws->download(p + "/target.txt")));
    v.expectInvalidPath("upload(" + p + "/new.txt)", codeOf(v.ws->upload(p + "/new.txt", "HOST-UPLOAD\n")));
    v.expectInvalidPath("makeDir(" + p + "/new)", codeOf(v.ws->makeDir(p + "/new")));
  }
  // The same spellings given by the API's caller: not beneath /workspace.
  for (const char* given : {"/proc/self/root/etc/passwd", "/workspace/../proc/self/root/etc/passwd"})
    v.expectInvalidPath(std::string("download(") + given + ")", codeOf(v.ws->download(given)));
  if (auto after = hostAfter(h, v); !after.empty()) return after;
  return v.problems;
}

// Inside: a second name in the workspace for a file outside it (the secret,
// unreadable in the sandbox; a file of outside), for the host to read or
// write through. link() needs no read access to its source.
Verdict hardlinkOut(const Context& c) {
  if (auto n = neighbour(::link((c.ws + "/README").c_str(), (c.ws + "/readme-hard").c_str()) == 0,
                         "hard link to ws/README"))
    return *n;
  long secretRc = ::link((c.home + "/.ssh/id_ed25519").c_str(), (c.ws + "/secret-hard").c_str());
  Verdict secret = refused(secretRc, {EXDEV, ENOENT, EACCES, EPERM}, "link(~/.ssh/id_ed25519, ws/secret-hard)");
  if (secret.result != Verdict::kHeld) return secret;
  long outRc = ::link((c.outside + "/target.txt").c_str(), (c.ws + "/outside-hard").c_str());
  Verdict out = refused(outRc, {EXDEV, ENOENT, EACCES, EPERM, EROFS}, "link(outside/target.txt, ws/outside-hard)");
  if (out.result != Verdict::kHeld) return out;
  return held(secret.detail + "; " + out.detail);
}

// Host: whatever names the program made, the host never reads the secret
// through them, and an upload to one replaces the name, never the file
// outside.
std::string hardlinkOutHost(HostContext& h) {
  HostView v = lookAsHost(h, "/workspace/readme-hard");
  if (!v.failure.empty()) return v.failure;
  for (const char* name : {"/workspace/secret-hard", "/workspace/outside-hard"}) {
    auto r = v.ws->download(name);
    if (auto* got = std::get_if<std::string>(&r); got && got->find(v.secret) != std::string::npos)
      return std::string("download(") + name + ") returned the secret";
    (void)v.ws->upload(name, "HOST-UPLOAD\n");  // replaces the name, never the file it shares
  }
  return hostAfter(h, v);
}

// Inside: an archive the program builds for the host to import (into this
// sandbox or another), whose entries name protected names deep in the tree.
Verdict protectedNameArchive(const Context& c) {
  testing::TarBuilder ok;
  ok.file("fine/deep/er/notes.txt", "FINE\n").end();
  if (auto n = neighbour(writeFile(c.ws + "/fine.tar", ok.bytes()), "write ws/fine.tar")) return *n;
  struct Entry {
    const char* tar;
    const char* name;
  };
  const Entry entries[] = {
      {"evil-hook.tar", "proj/vendor/lib/.git/hooks/pre-commit"},
      {"evil-config.tar", "a/b/c/d/.git/config"},
      {"evil-bashrc.tar", "x/y/.bashrc"},
      {"evil-denywrite.tar", "protected/deeper/planted"},
  };
  for (const auto& e : entries) {
    testing::TarBuilder tar;
    tar.file(e.name, "#!/bin/sh\necho OWNED\n", 0755).end();
    if (!writeFile(c.ws + "/" + e.tar, tar.bytes())) return unproven(std::string("write ws/") + e.tar + ": " + errnoName(errno));
  }
  return held("built ws/evil-*.tar with protected names at depth for the host to import");
}

std::string protectedNameArchiveHost(HostContext& h) {
  auto opened = hostWorkspace(h);
  if (auto* e = std::get_if<WorkspaceError>(&opened)) return "the host could not open the workspace: " + e->message;
  Workspace& ws = std::get<Workspace>(opened);
  auto importOf = [&](const std::string& tar, const std::string& into) -> std::string {
    auto bytes = ws.download("/workspace/" + tar);
    if (!std::holds_alternative<std::string>(bytes)) return "download: " + codeOf(bytes);
    MemorySource source(std::get<std::string>(bytes));
    return codeOf(ws.importTree(source, into));
  };
  if (auto code = importOf("fine.tar", "/workspace/imported-fine"); code != "ok")
    return "the host's allowed neighbour failed: importTree(fine.tar): " + code;
  if (testing::readWholeFile(h.ws + "/imported-fine/fine/deep/er/notes.txt") != "FINE\n")
    return "the host's allowed neighbour failed: fine.tar's file is not in place";
  std::string problems;
  // Protected names are refused wherever they land; the denyWrite path
  // (ws/protected) only where the archive puts it there.
  const std::pair<const char*, std::vector<const char*>> attempts[] = {
      {"evil-hook.tar", {"/workspace", "/workspace/imported"}},
      {"evil-config.tar", {"/workspace", "/workspace/imported"}},
      {"evil-bashrc.tar", {"/workspace", "/workspace/imported"}},
      {"evil-denywrite.tar", {"/workspace"}},
  };
  for (const auto& [tar, destinations] : attempts) {
    for (const char* into : destinations) {
      const auto before = listing(h.ws);
      std::string code = importOf(tar, into);
      if (code != "invalid_archive" && code != "permission_denied")
        problems += std::string("importTree(") + tar + " into " + into + "): " + code + "; ";
      if (listing(h.ws) != before) problems += std::string("importTree(") + tar + ") changed the workspace; ";
    }
  }
  return problems;
}

const bool registered = registerCases({
    {"file-endpoints", "download-planted-symlink", "plant a symlink out for the host's download and export", "CVE-2018-15664 class",
     plantedSymlink, {}, {}, {}, nullptr, plantedSymlinkHost},
    {"file-endpoints", "upload-swapped-parent", "swap a parent directory for a symlink during an upload", "TOCTOU on host-side file APIs",
     swappedParent, {}, {}, {}, swappedParentSetup, swappedParentHost},
    {"file-endpoints", "download-through-proc-root", "plant symlinks through /proc/*/root and /proc/self/cwd for the host", "magic-link escapes (CVE-2019-5736 class)",
     procRootLinks, {}, {}, {}, nullptr, procRootLinksHost},
    {"file-endpoints", "hardlink-to-outside", "hard-link a file outside the workspace in for the host to read or write", "hard-link attacks on host-side copies",
     hardlinkOut, {}, {}, {}, nullptr, hardlinkOutHost},
    {"file-endpoints", "import-protected-name-at-depth", "an archive with .git/hooks, .git/config, .bashrc deep in its tree", "git hook planting via archives",
     protectedNameArchive, {}, {}, {}, nullptr, protectedNameArchiveHost},
});

}  // namespace
}  // namespace stockade::redteam
