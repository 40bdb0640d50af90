// Where git's configuration sends hooks, the programs it has git run by
// path, and the files it includes: every core.hooksPath in the files git
// reads it from, every program named by path there, and every file they
// include, for derive(). A hooks directory named there, or an included file
// (which can name one, or core.fsmonitor), is as much a way to run code on
// the host's next git command as .git/hooks, so it is protected like the
// names of protected_names.cc.
//
// Read (only these, none of them inside a writable tree's contents except
// the repository that holds the tree): the system config (/etc/gitconfig),
// the user's (~/.gitconfig, ~/.config/git/config), and, for each writable
// tree, the config (and config.worktree, and the common directory's config)
// of the repository that contains the tree -- found by walking up from the
// tree, as git does from a working directory. Every include.path and
// includeIf.*.path is followed whatever its condition (bounded). Untrusted
// bytes: a malformed file yields what could be read, never a crash.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stockade::policy {

struct GitHooksPaths {
  // Absolute, lexically normal: absolute values, and relative ones of a
  // repository's own config (relative to its working tree).
  std::vector<std::string> paths;
  // The same for the programs git runs by itself that those configs name by
  // path (parseHooksPaths()); their relative values in the user's and the
  // system config are among `names`.
  std::vector<std::string> programs;
  // Relative values of the user's and the system config: relative to the
  // working tree of whichever repository git runs in, so protected as names
  // at any depth ("githooks", ".config/hooks").
  std::vector<std::string> names;
  // Every file an include.path or includeIf.*.path of those configs names
  // (absolute, lexically normal, whether or not it exists): git reads it as
  // configuration, so a writable one is as good as the config itself.
  std::vector<std::string> included;
  // The symlinks among the hooks and config of the repository that holds a
  // tree (hooks itself, each entry of it, config): what they lead to is
  // what git runs or reads, though only the link has a protected name.
  std::vector<std::string> links;
};

// `home`: $HOME ("": no user config). `trees`: absolute writable trees.
GitHooksPaths gitHooksPaths(const std::string& home, const std::vector<std::string>& trees);

// Every value of core.hooksPath in one config file's text, includes not
// followed (for tests and the fuzzer). `includes` receives include paths as
// written; `programs` the programs named by path (a first word with a '/')
// in the keys whose value is a command git runs by itself (core.fsmonitor,
// core.sshCommand, diff.<driver>.textconv, filter.<driver>.clean, "!" aliases,
// ...): a script in a writable tree named there runs like a hook.
std::vector<std::string> parseHooksPaths(std::string_view text, std::vector<std::string>* includes = nullptr,
                                         std::vector<std::string>* programs = nullptr);

}  // namespace stockade::policy
