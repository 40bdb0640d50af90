// Protected names the write broker decides (issue 10), beyond those of
// cases_filesystem.cc: startup files that tools read from the directory they
// start in, or from a home that is a writable tree, and run what they say.
// Each is created where the host's next use would find it; the broker must
// refuse it by name (EACCES, its own refusal, not the read-only view's
// EROFS), while a look-alike name beside it is written.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "tests/security/redteam/redteam.h"

namespace stockade::redteam {
namespace {

// Relative to ws/proj, each with the tool that runs it.
constexpr const char* kStartupFiles[] = {
    ".pdbrc",                     // pdb: its commands are Python statements
    ".perldb",                    // perl -d
    ".ocamlinit",                 // the OCaml toplevel
    ".octaverc",                  // Octave
    ".tool-versions",             // asdf / mise: a path: version is the tool they run
    "rust-toolchain.toml",        // rustup: [toolchain] path is where cargo comes from
    "rust-toolchain",             // the same, legacy name
    "mise/config.toml",           // mise's other project config names
    ".mise/config.toml",
    ".direnvrc",                  // direnv: sourced before every .envrc
    ".config/direnv/direnvrc",
    ".config/hg/hgrc",            // Mercurial's XDG config: hooks
    ".gnupg/gpg-agent.conf",      // pinentry-program
    ".vim/plugin/evil.vim",       // vim loads plugin/ at every start
    ".config/vim/vimrc",
    ".emacs",
    ".emacs.d/init.el",
    ".config/emacs/init.el",
    ".local/bin/git",             // first on PATH (Debian's ~/.profile)
    ".local/lib/python3.11/site-packages/evil.pth",  // run by every python3
    ".local/share/nvim/site/plugin/evil.lua",
    "opencode.json",              // coding agents: MCP servers, plugins
    ".opencode/plugin/evil.ts",
    ".roo/mcp.json",
    ".kiro/settings/mcp.json",
    ".kiro/hooks/on-save.kiro.hook",
};

Verdict directoryStartupFiles(const Context& c) {
  const std::string proj = c.ws + "/proj";
  if (::mkdir(proj.c_str(), 0755) != 0 && errno != EEXIST) return unproven("mkdir ws/proj: " + errnoName(errno));
  if (auto n = neighbour(writeFile(proj + "/pdbrc.example", "ok\n"), "write ws/proj/pdbrc.example")) return *n;
  if (auto n = neighbour(writeFile(proj + "/rust-toolchain.md", "ok\n"), "write ws/proj/rust-toolchain.md")) return *n;
  for (const char* name : kStartupFiles) {
    // The directories on the way: one whose own name is protected (.vim,
    // .gnupg) is the broker's refusal already.
    std::string made = proj, shown = "ws/proj";
    const std::filesystem::path rel(name);
    bool refusedOnTheWay = false;
    for (const auto& part : rel.parent_path()) {
      made += "/" + part.string();
      shown += "/" + part.string();
      if (::mkdir(made.c_str(), 0755) == 0 || errno == EEXIST) continue;
      Verdict v = refused(-1, {EACCES}, "mkdir " + shown);
      if (v.result != Verdict::kHeld) return v;
      refusedOnTheWay = true;
      break;
    }
    if (refusedOnTheWay) continue;
    Verdict v = refused(writeFile(proj + "/" + name, "evil\n") ? 0 : -1, {EACCES}, std::string("create ws/proj/") + name);
    if (v.result != Verdict::kHeld) return v;
  }
  return held("each of the " + std::to_string(std::size(kStartupFiles)) +
              " startup files refused (EACCES) beside ws/proj/pdbrc.example and rust-toolchain.md");
}

// Host: none of them is there afterwards, whatever the case said.
std::string directoryStartupFilesHost(HostContext& h) {
  std::string found;
  for (const char* name : kStartupFiles) {
    std::error_code ec;
    if (std::filesystem::exists(h.ws + "/proj/" + name, ec)) found += std::string(found.empty() ? "" : ", ") + name;
  }
  return found.empty() ? std::string() : "left in ws/proj: " + found;
}

// A symlink named with a trailing slash, "l/", as the name a call removes or
// moves: the kernel acts on the symlink itself (ENOTDIR: it is no
// directory), never on the directory it points to. The broker once followed
// it, so rmdir("l/") removed ws/keep -- an rm or mv of a link the program
// planted destroying or moving the host's directory behind it.
Verdict trailingSlashSymlink(const Context& c) {
  const std::string keep = c.ws + "/keep", link = c.ws + "/to-keep";
  if (::mkdir(keep.c_str(), 0755) != 0 && errno != EEXIST) return unproven("mkdir ws/keep: " + errnoName(errno));
  if (::symlink("keep", link.c_str()) != 0) return unproven("symlink ws/to-keep: " + errnoName(errno));
  if (auto n = neighbour(::rename(link.c_str(), (link + "2").c_str()) == 0 && ::rename((link + "2").c_str(), link.c_str()) == 0,
                         "rename the symlink ws/to-keep and back"))
    return *n;
  Verdict v = refused(::rmdir((link + "/").c_str()), {ENOTDIR}, "rmdir ws/to-keep/");
  if (v.result != Verdict::kHeld) return v;
  v = refused(::rename((link + "/").c_str(), (c.ws + "/moved").c_str()), {ENOTDIR}, "rename ws/to-keep/ ws/moved");
  if (v.result != Verdict::kHeld) return v;
  if (::symlink("made-through", (c.ws + "/dangling").c_str()) != 0)
    return unproven("symlink ws/dangling: " + errnoName(errno));
  v = refused(::mkdir((c.ws + "/dangling/").c_str(), 0755), {EEXIST}, "mkdir ws/dangling/ (a dangling symlink)");
  if (v.result != Verdict::kHeld) return v;
  return held("rmdir and rename of ws/to-keep/ refused (ENOTDIR), mkdir of ws/dangling/ EEXIST; ws/keep untouched");
}

std::string trailingSlashSymlinkHost(HostContext& h) {
  std::error_code ec;
  if (!std::filesystem::is_directory(h.ws + "/keep", ec)) return "ws/keep is gone";
  if (std::filesystem::exists(h.ws + "/moved", ec)) return "ws/keep was moved to ws/moved";
  if (std::filesystem::exists(h.ws + "/made-through", ec)) return "mkdir through ws/dangling/ made ws/made-through";
  return {};
}

const bool registered = registerCases({
    {"protected-names", "directory-startup-files",
     "create .pdbrc, .tool-versions, rust-toolchain.toml, .direnvrc, .vim/, .gnupg/, opencode.json, .kiro/hooks and more",
     "tools that run config found in the directory they start in", directoryStartupFiles, {}, {}, {}, nullptr,
     directoryStartupFilesHost},
    {"writes-persistence", "trailing-slash-symlink", "rmdir, rename and mkdir of a symlink spelt l/ reach its target",
     "path resolution of the last component (path_resolution(7))", trailingSlashSymlink, {}, {}, {}, nullptr,
     trailingSlashSymlinkHost},
});

}  // namespace
}  // namespace stockade::redteam
