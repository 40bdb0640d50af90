// Name keys: every spelling a case-insensitive directory takes for a name has
// the name's key.
#include "policy/name_fold.h"

#include <gtest/gtest.h>

namespace stockade::policy {
namespace {

std::string key(std::string_view name) {
  std::string storage;
  return std::string(foldedName(name, storage));
}

TEST(NameFoldTest, ANameThatIsItsOwnKeyIsReturnedAsItIs) {
  std::string storage;
  const std::string_view name = ".bashrc";
  EXPECT_EQ(foldedName(name, storage).data(), name.data());
  for (const char* same : {".", "..", "", "a.b", "x y", "..."}) EXPECT_EQ(key(same), same) << same;
}

TEST(NameFoldTest, EverySpellingACaseInsensitiveDirectoryTakesForANameHasItsKey) {
  const std::pair<const char*, const char*> cases[] = {
      {".BashRC", ".bashrc"},
      {".GIT", ".git"},
      {".VSCode", ".vscode"},
      {".ba\u017fhrc", ".bashrc"},           // U+017F LATIN SMALL LETTER LONG S folds to s
      {".\u00dfh", ".ssh"},                   // sharp s folds to ss (full folding)
      {".con\ufb01g", ".config"},              // the fi ligature
      {"\u212aube", "kube"},                   // KELVIN SIGN is K
      {"\u200b.bash\u200drc", ".bashrc"},      // zero-width space and joiner: default-ignorable
      {".bashrc\ufe0f", ".bashrc"},            // a variation selector
      {".bashrc.", ".bashrc"},                 // vfat and exfat drop trailing dots
      {".bashrc . ", ".bashrc"},               // and Windows servers trailing spaces
      {"HOOKS", "hooks"},
      {"\u00c9t\u00c9", "\u00c9t\u00c9"},      // non-ASCII letters that fold outside ASCII stay (no ASCII name is theirs)
      {"A\xff" "B", "a\xff" "b"},             // bytes that are not UTF-8 are kept
  };
  for (const auto& [name, want] : cases) EXPECT_EQ(key(name), want) << name;
}

TEST(NameFoldTest, APathsKeyIsItsComponentsKeys) {
  EXPECT_EQ(foldedPath("/W/.GIT/Hooks/pre-commit"), "/w/.git/hooks/pre-commit");
  EXPECT_EQ(foldedPath("/w/.git./config"), "/w/.git/config");
  EXPECT_EQ(foldedPath("/"), "/");
  EXPECT_EQ(foldedPath("/a/b"), "/a/b");
}

}  // namespace
}  // namespace stockade::policy
