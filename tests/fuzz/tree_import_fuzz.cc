// libFuzzer target: bytes -> Workspace::importTree() into a real workspace
// directory (on /dev/shm when it is there), the whole path: libarchive's
// parse, the import policy, staging, placement. Nothing may crash, hang or
// leak, and after every input:
//   - nothing beside the workspace changed (a sentinel file and directory
//     stand there; no staging directory is left behind);
//   - a refused archive left the workspace exactly as it was (empty);
//   - an accepted one holds no symlink that leads outside it (each is
//     resolved beneath the workspace by the kernel) and no special file,
//     and no set-id or sticky bit.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "fuzz_check.h"
#include "platform/linux/beneath.h"
#include "stockade/policy.h"
#include "stockade/workspace.h"

namespace {

namespace fs = std::filesystem;
using namespace stockade;

struct World {
  World() {
    std::string base = fs::exists("/dev/shm") ? "/dev/shm" : "/var/tmp";
    root = base + "/stockade-import-fuzz-" + std::to_string(::getpid());
    fs::remove_all(root);
    fs::create_directories(root + "/ws");
    fs::create_directories(root + "/beside");
    {
      int fd = ::open((root + "/beside/sentinel").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      FUZZ_CHECK(fd >= 0 && ::write(fd, "S", 1) == 1);
      ::close(fd);
    }
    ws = root + "/ws";
    auto derived = derive(SandboxPolicy::fromJson(
                              R"({"filesystem": {"denyRead": [], "allowRead": [], "allowWrite": ["."],
                                  "denyWrite": ["blocked"]}})"),
                          {.home = root, .cwd = ws, .tmpdir = std::nullopt});
    rules = std::make_shared<DerivedRules>(std::get<DerivedRules>(std::move(derived)));
    auto w = Workspace::open({.hostPath = ws,
                              .rules = [r = rules] { return *r; },
                              .importLimits = {.maxEntries = 2000, .maxEntryBytes = 1 << 20, .maxTotalBytes = 4 << 20}});
    workspace.emplace(std::get<Workspace>(std::move(w)));
  }
  std::string root, ws;
  std::shared_ptr<DerivedRules> rules;
  std::optional<Workspace> workspace;
};

World& world() {
  static World w;
  return w;
}

std::size_t entriesIn(const std::string& dir) {
  std::size_t n = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator(); ++it) ++n;
  return n;
}

// Every object in the workspace, checked; returns how many.
void checkTree(int wsFd, const std::string& dir, const std::string& rel) {
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string childRel = rel.empty() ? e.path().filename().string() : rel + "/" + e.path().filename().string();
    struct stat st {};
    FUZZ_CHECK(::lstat(e.path().c_str(), &st) == 0);
    FUZZ_CHECK(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode));
    FUZZ_CHECK((st.st_mode & 07000) == 0);
    if (S_ISLNK(st.st_mode)) {
      // A link the archive made must resolve beneath the workspace (or be
      // dangling there): never EXDEV, the kernel's "it leads out".
      auto r = stockade::platform::openBeneath(wsFd, "ws", childRel, O_PATH);
      if (auto* err = std::get_if<stockade::platform::SysError>(&r)) FUZZ_CHECK(err->error != EXDEV);
    }
    if (S_ISDIR(st.st_mode)) checkTree(wsFd, e.path().string(), childRel);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World& w = world();
  MemorySource src(std::string_view(reinterpret_cast<const char*>(data), size));
  auto refused = w.workspace->importTree(src);
  FUZZ_CHECK(entriesIn(w.root) == 2);  // ws and beside: no staging directory left
  FUZZ_CHECK(entriesIn(w.root + "/beside") == 1);
  if (refused) {
    FUZZ_CHECK(refused->code == WorkspaceErrorCode::kInvalidArchive || refused->code == WorkspaceErrorCode::kTimeout ||
               refused->code == WorkspaceErrorCode::kUnavailable);
    FUZZ_CHECK(entriesIn(w.ws) == 0);
    FUZZ_CHECK(refused->code != WorkspaceErrorCode::kInvalidArchive || !refused->reason.empty());
  } else {
    int fd = ::open(w.ws.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    checkTree(fd, w.ws, "");
    ::close(fd);
    FUZZ_CHECK(!fs::exists(w.ws + "/blocked"));
    for (const auto& e : fs::directory_iterator(w.ws)) fs::remove_all(e.path());
  }
  return 0;
}
