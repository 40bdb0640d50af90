// THE protected-name table (declared in protected_names.h) and its matcher.
#include "policy/protected_names.h"

#include <algorithm>

#include "policy/name_fold.h"

namespace stockade::policy {
namespace {

constexpr const char* kGitConfig = "names programs git runs (core.fsmonitor, core.sshCommand, aliases) and core.hooksPath";

// THE table: every protected name and why. A name here holds at any depth of
// every writable tree, whether or not it exists when the sandbox starts.
constexpr ProtectedNameEntry kTable[] = {
    // git: everything git reads to find its configuration and hooks,
    // recognised by name (a git directory whose HEAD was renamed away is
    // still one).
    {".git/hooks", false, "git runs hooks on the host's next git command"},
    {".git/config", false, kGitConfig},
    {".git/config.worktree", false, kGitConfig},
    {".git/commondir", false, "points git at another directory for its config and hooks"},
    {".git/info", false, "info/attributes chooses the filter and diff programs git runs"},
    {".git/modules/**/hooks", false, "a submodule's hooks, run by git in the submodule"},
    {".git/modules/**/config", false, kGitConfig},
    {".git/modules/**/config.worktree", false, kGitConfig},
    {".git/modules/**/commondir", false, "points a submodule's git at another directory for config and hooks"},
    {".git/modules/**/info", false, "info/attributes chooses the filter and diff programs git runs"},
    {".git/worktrees/*/commondir", false, "points a linked worktree's git at another directory for config and hooks"},
    {".git/worktrees/*/config.worktree", false, kGitConfig},
    // A linked worktree's submodules keep their git directories in its own
    // (.git/worktrees/<wt>/modules/<sub>), not in .git/modules.
    {".git/worktrees/*/modules/**/hooks", false, "a linked worktree's submodule's hooks, run by git in the submodule"},
    {".git/worktrees/*/modules/**/config", false, kGitConfig},
    {".git/worktrees/*/modules/**/config.worktree", false, kGitConfig},
    {".git/worktrees/*/modules/**/commondir", false, "points a submodule's git at another directory for config and hooks"},
    {".git/worktrees/*/modules/**/info", false, "info/attributes chooses the filter and diff programs git runs"},
    {".git", true, "a .git file or symlink points git at another git directory (submodules, worktrees)"},
    {".gitmodules", false, "submodule URLs and paths that git fetches and checks out"},
    {".gitconfig", false, kGitConfig},
    {".config/git", false, "the user's git config and attributes (XDG location)"},
    // Mercurial: the same for hg as git's config and hooks are for git.
    {".hg/hgrc", false, "Mercurial runs the hooks and loads the extensions (Python files) it lists"},
    {".hg/hgrc-not-shared", false, "Mercurial runs the hooks and loads the extensions (Python files) it lists"},
    {".hg/sharedpath", false, "points Mercurial at another repository for its config and hooks (hg share)"},
    {".hgrc", false, "the user's Mercurial config: hooks and extensions run at every hg command"},
    {".config/hg", false, "the user's Mercurial config (XDG location): hooks and extensions run at every hg command"},
    // Hook managers: the hook git runs reads what to run from these.
    {".husky", false, "husky's hooks (core.hooksPath .husky/_) run the scripts here on commit"},
    {".pre-commit-config.yaml", false, "the pre-commit hook runs the commands listed here"},
    {"lefthook.yml", false, "lefthook's git hooks run the commands listed here"},
    {".lefthook.yml", false, "lefthook's git hooks run the commands listed here"},
    {"lefthook-local.yml", false, "lefthook's git hooks run the commands listed here"},
    {".lefthook-local.yml", false, "lefthook's git hooks run the commands listed here"},
    {".lefthook", false, "lefthook's git hooks run the scripts here"},
    {".overcommit.yml", false, "overcommit's git hooks run the commands listed here"},
    // Shells and sessions: run at the next login or shell start.
    {".bashrc", false, "bash runs it at every interactive start"},
    {".bash_profile", false, "bash runs it at login"},
    {".bash_login", false, "bash runs it at login"},
    {".bash_logout", false, "bash runs it at logout"},
    {".bash_aliases", false, "Debian's .bashrc runs it"},
    {".profile", false, "login shells run it"},
    {".zshrc", false, "zsh runs it at every interactive start"},
    {".zshenv", false, "zsh runs it at every start"},
    {".zprofile", false, "zsh runs it at login"},
    {".zlogin", false, "zsh runs it at login"},
    {".zlogout", false, "zsh runs it at logout"},
    {".kshrc", false, "ksh runs it at every interactive start"},
    {".mkshrc", false, "mksh runs it at every interactive start"},
    {".cshrc", false, "csh and tcsh run it at every start"},
    {".tcshrc", false, "tcsh runs it at every start"},
    {".login", false, "csh runs it at login"},
    {".logout", false, "csh runs it at logout"},
    {".inputrc", false, "readline macros type commands into the next shell"},
    {".bash_completion", false, "bash-completion sources it in every interactive shell"},
    {".tmux.conf", false, "run-shell and if-shell run commands when tmux starts"},
    {".config/tmux", false, "tmux reads tmux.conf here (run-shell and if-shell run commands)"},
    {".screenrc", false, "screen runs the commands it lists"},
    {".config/fish", false, "fish runs config.fish and conf.d at every start"},
    {".xprofile", false, "the graphical session runs it at login"},
    {".xsessionrc", false, "the graphical session runs it at login"},
    {".xsession", false, "the graphical session runs it at login"},
    {".xinitrc", false, "startx runs it"},
    {".config/autostart", false, "the desktop starts these entries at login"},
    {".config/systemd", false, "systemd --user runs these units"},
    {".config/environment.d", false, "sets the environment (LD_PRELOAD) of the user's services"},
    {".pam_environment", false, "sets the environment of the next login"},
    {".local/bin", false, "~/.profile puts it first on PATH: a program here runs instead of the command the user types"},
    {".local/lib/*/site-packages", false, "every python3 start runs the .pth files' import lines and usercustomize.py here"},
    {".local/share/nvim/site", false, "neovim runs plugin/ scripts from here at every start"},
    {".envrc", false, "direnv runs it when a shell enters the directory"},
    {".direnvrc", false, "direnv sources it before every .envrc it loads"},
    {".config/direnv", false, "direnv sources direnvrc and lib/*.sh before every .envrc it loads"},
    {"mise.toml", false, "mise runs its hooks and env scripts when a shell enters the directory"},
    {".mise.toml", false, "mise runs its hooks and env scripts when a shell enters the directory"},
    {"mise.local.toml", false, "mise runs its hooks and env scripts when a shell enters the directory"},
    {".mise.local.toml", false, "mise runs its hooks and env scripts when a shell enters the directory"},
    {".config/mise", false, "mise runs its hooks and env scripts when a shell enters a directory"},
    {"mise/config.toml", false, "mise runs its hooks and env scripts when a shell enters the directory"},
    {".mise/config.toml", false, "mise runs its hooks and env scripts when a shell enters the directory"},
    {".tool-versions", false, "asdf and mise run the tool a path: version names when it is used in the directory"},
    {"rust-toolchain.toml", false, "rustup runs cargo and rustc from the toolchain its path names, in the directory"},
    {"rust-toolchain", false, "rustup runs cargo and rustc from the toolchain its path names, in the directory"},
    // Tools whose configuration names a program they run, or is code they run.
    {".ripgreprc", false, "--pre names a program rg runs on every file it searches"},
    {".cargo/config.toml", false, "target runners, rustc-wrapper and aliases name programs cargo runs here"},
    {".cargo/config", false, "target runners, rustc-wrapper and aliases name programs cargo runs here"},
    {".pnpmfile.cjs", false, "pnpm runs it at every install"},
    {"bunfig.toml", false, "preload names scripts bun runs first"},
    {".bunfig.toml", false, "preload names scripts bun runs first"},
    {".mvn", false, "extensions.xml loads Maven extensions (code) and jvm.config adds JVM options (-javaagent)"},
    {".gdbinit", false, "gdb runs its commands (shell, python) at start"},
    {".lldbinit", false, "lldb runs its commands at start"},
    {".pdbrc", false, "pdb runs its commands (Python statements) when it starts in the directory"},
    {".perldb", false, "perl -d runs this Perl code when it starts in the directory"},
    {".irbrc", false, "irb runs this Ruby code at start"},
    {".pryrc", false, "pry runs this Ruby code at start"},
    {".Rprofile", false, "R runs this code when it starts in the directory"},
    {".ghci", false, "ghci runs its commands (:! runs programs) when it starts in the directory"},
    {".erlang", false, "erl runs this code when it starts in the directory"},
    {".ocamlinit", false, "the OCaml toplevel runs this code when it starts in the directory"},
    {".octaverc", false, "Octave runs this code when it starts in the directory (system() runs programs)"},
    {".sqliterc", false, "the sqlite3 shell runs its dot-commands (.shell) at start"},
    {".psqlrc", false, "psql runs its meta-commands (\\! runs programs) at start"},
    {".ipython", false, "IPython runs the profiles' startup scripts"},
    {".mailcap", false, "names the programs mail readers run on attachments"},
    {".lessfilter", false, "lesspipe runs it on every file less opens"},
    {".npmrc", false, "script-shell and node-options run programs at the next npm command"},
    {".yarnrc", false, "yarn-path names the script every yarn command runs"},
    {".yarnrc.yml", false, "yarnPath names the script every yarn command runs"},
    {".ssh", false, "config runs ProxyCommand at the next ssh; authorized_keys admits logins; rc runs at login"},
    {".docker/config.json", false, "credsStore and credHelpers name programs docker runs"},
    {".kube/config", false, "exec credential plugins name programs kubectl runs"},
    {".aws/config", false, "credential_process names a program the AWS tools run"},
    {".gnupg", false, "gpg-agent.conf names the pinentry and scdaemon programs gpg runs"},
    // Editors: opening the folder runs tasks and trusts settings.
    {".vscode", false, "VS Code runs tasks and trusts settings from here when the folder is opened"},
    {".idea", false, "JetBrains IDEs run configurations and trust settings from here"},
    {".zed", false, "Zed runs tasks and trusts settings from here"},
    {".helix", false, "Helix starts the language servers its languages.toml names when a file here is opened"},
    {".devcontainer", false, "devcontainer.json runs initializeCommand on the host"},
    {".devcontainer.json", false, "runs initializeCommand on the host"},
    {".exrc", false, "vim's 'exrc' runs it"},
    {".nvimrc", false, "neovim's 'exrc' runs it"},
    {".nvim.lua", false, "neovim's 'exrc' runs it"},
    {".vimrc", false, "vim runs it at every start"},
    {".gvimrc", false, "gvim runs it at every start"},
    {".vim", false, "vim runs plugin/ and ftplugin/ scripts from here at every start"},
    {".config/vim", false, "vim runs vimrc and plugin/ scripts from here at every start (XDG location)"},
    {".emacs", false, "Emacs runs it at every start"},
    {".emacs.el", false, "Emacs runs it at every start"},
    {".emacs.d", false, "Emacs runs init.el and early-init.el from here at every start"},
    {".config/emacs", false, "Emacs runs init.el and early-init.el from here at every start (XDG location)"},
    {".config/nvim", false, "neovim runs init.lua and its plugins at every start"},
    {".dir-locals.el", false, "Emacs evaluates its eval: forms"},
    {".dir-locals-2.el", false, "Emacs evaluates its eval: forms"},
    // Coding agents: settings, hooks, commands and MCP servers they start.
    {".claude/settings.json", false, "Claude Code runs the hooks and MCP servers it lists"},
    {".claude/settings.local.json", false, "Claude Code runs the hooks and MCP servers it lists"},
    {".claude/commands", false, "Claude Code runs these commands"},
    {".claude/agents", false, "Claude Code runs these sub-agents"},
    {".claude/hooks", false, "Claude Code runs these hooks"},
    {".claude/skills", false, "Claude Code runs these skills and their scripts"},
    {".claude.json", false, "Claude Code starts the MCP servers it lists"},
    {".mcp.json", false, "coding agents start the MCP servers it lists"},
    {".cursor", false, "Cursor starts the MCP servers and runs the hooks listed here"},
    {".gemini", false, "Gemini CLI starts the MCP servers and tool commands listed here"},
    {".codex", false, "Codex starts the MCP servers listed here"},
    {".continue", false, "Continue starts the MCP servers listed here"},
    {".amazonq", false, "Amazon Q starts the MCP servers listed here"},
    {".windsurf", false, "Windsurf runs the workflows and MCP servers listed here"},
    {".aider.conf.yml", false, "aider runs the lint and test commands it names"},
    {"opencode.json", false, "opencode starts the local MCP servers and loads the plugins it lists"},
    {"opencode.jsonc", false, "opencode starts the local MCP servers and loads the plugins it lists"},
    {".opencode", false, "opencode loads the plugins (code) and agents here at every start"},
    {".roo/mcp.json", false, "Roo Code starts the MCP servers it lists"},
    {".kiro/settings", false, "mcp.json: Kiro starts the MCP servers it lists"},
    {".kiro/hooks", false, "Kiro runs these hooks' commands on file events"},
    {".kiro/agents", false, "Kiro's agents start the MCP servers and run the tools they list"},
};

bool isWild(std::string_view part) { return part == "*" || part == "**"; }

using Parts = std::span<const std::string_view>;

// Does pattern[p..] match path[c..end) exactly?
bool matchExact(Parts pattern, std::size_t p, Parts path, std::size_t c) {
  if (p == pattern.size()) return c == path.size();
  if (pattern[p] == "**") {
    for (std::size_t k = c; k <= path.size(); ++k)
      if (matchExact(pattern, p + 1, path, k)) return true;
    return false;
  }
  if (c == path.size()) return false;
  if (pattern[p] != "*" && pattern[p] != path[c]) return false;
  return matchExact(pattern, p + 1, path, c + 1);
}

// Does pattern[p..] match some prefix path[c..e) (e <= end)? The object at
// path[..e) is then protected, and so is everything beneath it.
bool matchPrefix(Parts pattern, std::size_t p, Parts path, std::size_t c) {
  if (p == pattern.size()) return true;
  if (pattern[p] == "**") {
    for (std::size_t k = c; k <= path.size(); ++k)
      if (matchPrefix(pattern, p + 1, path, k)) return true;
    return false;
  }
  if (c == path.size()) return false;
  if (pattern[p] != "*" && pattern[p] != path[c]) return false;
  return matchPrefix(pattern, p + 1, path, c + 1);
}

// Does path[c..end) match a proper prefix of pattern[p..], leaving at least
// one component that is not "**" to match beneath the path?
bool matchContext(Parts pattern, std::size_t p, Parts path, std::size_t c) {
  if (c == path.size()) {
    for (std::size_t i = p; i < pattern.size(); ++i)
      if (pattern[i] != "**") return true;
    return false;
  }
  if (p == pattern.size()) return false;
  if (pattern[p] == "**") {
    // "**" absorbs this component, or nothing at all.
    return matchContext(pattern, p, path, c + 1) || matchContext(pattern, p + 1, path, c);
  }
  if (pattern[p] != "*" && pattern[p] != path[c]) return false;
  return matchContext(pattern, p + 1, path, c + 1);
}

}  // namespace

std::span<const ProtectedNameEntry> protectedNameTable() noexcept { return kTable; }

std::vector<ProtectedName> tableProtectedNames() {
  std::vector<ProtectedName> out;
  for (const auto& e : kTable) out.push_back({e.pattern, e.nonDirectoryOnly});
  return out;
}

std::string_view protectedNameReason(const ProtectedName& name) noexcept {
  for (const auto& e : kTable)
    if (name.pattern == e.pattern && name.nonDirectoryOnly == e.nonDirectoryOnly) return e.reason;
  return {};
}

std::vector<std::string_view> pathComponents(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

ProtectedNameMatcher::ProtectedNameMatcher(std::vector<ProtectedName> names) : names_(std::move(names)) {
  keys_.reserve(names_.size());
  for (const auto& n : names_) keys_.push_back(foldedPath(n.pattern));
  compiled_.reserve(names_.size());
  for (std::size_t i = 0; i < names_.size(); ++i) {
    auto parts = pathComponents(keys_[i]);
    if (parts.empty()) continue;  // protects nothing by name
    compiled_.push_back({std::move(parts), &names_[i]});
  }
  for (std::size_t i = 0; i < compiled_.size(); ++i) {
    std::string_view first = compiled_[i].parts.front();
    if (isWild(first)) {
      wildFirst_.push_back(i);
    } else {
      byFirst_.emplace_back(first, i);
    }
  }
  std::sort(byFirst_.begin(), byFirst_.end());
}

template <typename Visit>
const ProtectedName* ProtectedNameMatcher::firstMatch(std::string_view path, Visit&& matches) const {
  auto parts = pathComponents(path);
  // Each component by its key; the ones that change are kept here (reserved:
  // the views into them stay put).
  std::vector<std::string> folded;
  std::string key;
  for (auto& part : parts) {
    if (foldedName(part, key).data() == part.data()) continue;
    if (folded.capacity() == 0) folded.reserve(parts.size());
    part = folded.emplace_back(std::move(key));
  }
  const Parts all(parts);
  for (std::size_t start = 0; start < parts.size(); ++start) {
    auto it = std::lower_bound(byFirst_.begin(), byFirst_.end(), std::pair<std::string_view, std::size_t>(parts[start], 0));
    for (; it != byFirst_.end() && it->first == parts[start]; ++it)
      if (matches(compiled_[it->second], all, start)) return compiled_[it->second].name;
    for (std::size_t i : wildFirst_)
      if (matches(compiled_[i], all, start)) return compiled_[i].name;
  }
  return nullptr;
}

const ProtectedName* ProtectedNameMatcher::protecting(std::string_view path, bool isDirectory) const {
  return firstMatch(path, [&](const Compiled& c, Parts all, std::size_t start) {
    if (c.name->nonDirectoryOnly) return !isDirectory && matchExact(c.parts, 0, all, start);
    return matchPrefix(c.parts, 0, all, start);
  });
}

const ProtectedName* ProtectedNameMatcher::contextOf(std::string_view path) const {
  return firstMatch(path, [&](const Compiled& c, Parts all, std::size_t start) {
    return !c.name->nonDirectoryOnly && matchContext(c.parts, 0, all, start);
  });
}

}  // namespace stockade::policy
