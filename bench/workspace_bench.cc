// workspace_bench: the workspace's tree export/import of a 10,000-file tree
// against GNU tar on the same tree and disk, and a large file's upload and
// download through the library against cp. Runs are interleaved, each
// starting at another column, so machine drift and the GiB of dirty pages
// each write leaves behind hit every column alike; prints the medians and
// the ratios (issue 13's targets: trees <= 1.3x tar's time, files >= 70%
// of cp's throughput; the daemon's HTTP path is to be measured with its file
// routes).
//
// usage: workspace_bench [RUNS] [FILE_MIB]   (defaults 5 and 1024; under /var/tmp)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "stockade/policy.h"
#include "stockade/rules.h"
#include "stockade/workspace.h"

namespace {

namespace fs = std::filesystem;
using namespace stockade::bench;
using namespace stockade;

Workspace openWorkspace(const std::string& dir) {
  auto derived = derive(SandboxPolicy::fromJson(R"({"filesystem": {"denyRead": [], "allowRead": [],
                                                   "allowWrite": ["."], "denyWrite": []}})"),
                        // Home is the bench's root: a policy may not let a child write the home directory itself.
                        {.home = fs::path(dir).parent_path().string(), .cwd = dir, .tmpdir = std::nullopt});
  if (auto* e = std::get_if<PolicyError>(&derived)) check(false, "derive: " + e->text());
  auto rules = std::make_shared<DerivedRules>(std::get<DerivedRules>(std::move(derived)));
  auto w = Workspace::open({.hostPath = dir, .rules = [rules] { return *rules; }});
  check(std::holds_alternative<Workspace>(w), "Workspace::open");
  return std::get<Workspace>(std::move(w));
}

class FileSink final : public ByteSink {
 public:
  explicit FileSink(const std::string& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) {}
  ~FileSink() override { ::close(fd_); }
  WorkspaceStatus write(std::string_view b) override {
    while (!b.empty()) {
      ssize_t n = ::write(fd_, b.data(), b.size());
      if (n < 0) return WorkspaceError{.message = "write failed"};
      b.remove_prefix(static_cast<std::size_t>(n));
    }
    return std::nullopt;
  }

 private:
  int fd_;
};

class FileSource final : public ByteSource {
 public:
  explicit FileSource(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~FileSource() override { ::close(fd_); }
  WorkspaceResult<std::size_t> read(std::span<char> buf) override {
    ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n < 0) return WorkspaceError{.message = "read failed"};
    return static_cast<std::size_t>(n);
  }

 private:
  int fd_;
};

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const long fileMiB = argc > 2 ? std::max(1L, std::atol(argv[2])) : 1024;
  std::string root = "/var/tmp/stockade-workspace-bench-" + std::to_string(::getpid());
  fs::create_directories(root);
  const std::string src = root + "/src";

  // 10,000 files: 100 directories of 100 files, 1-8 KiB each.
  writeSmallTree(src, 100, 100);
  Workspace ws = openWorkspace(src);
  std::vector<double> oursExport, tarExport, oursImport, tarImport;
  for (int i = 0; i < runs; ++i) {
    oursExport.push_back(seconds([&] {
      FileSink sink(root + "/ours.tar");
      check(!ws.exportTree(sink), "exportTree");
    }));
    tarExport.push_back(seconds([&] { sh("tar -cf " + root + "/gnu.tar -C " + src + " ."); }));
    fs::remove_all(root + "/in-ours");
    fs::remove_all(root + "/in-tar");
    fs::create_directories(root + "/in-ours");
    fs::create_directories(root + "/in-tar");
    Workspace dest = openWorkspace(root + "/in-ours");
    oursImport.push_back(seconds([&] {
      FileSource source(root + "/ours.tar");
      auto e = dest.importTree(source);
      if (e) std::fprintf(stderr, "%s\n", e->message.c_str());
      check(!e, "importTree");
    }));
    tarImport.push_back(seconds([&] { sh("tar -xf " + root + "/gnu.tar -C " + root + "/in-tar"); }));
  }

  // A large file: upload (FileWriter) and download (FileReader) against cp.
  const std::string big = root + "/big.bin";
  writeRandomFile(big, fileMiB);
  std::string filesDir = root + "/files";
  fs::create_directories(filesDir);
  Workspace files = openWorkspace(filesDir);
  std::vector<double> oursUp, cpUp, oursDown, cpDown;
  for (int i = 0; i < runs; ++i) {
    rotated(i, {{&oursUp, [&] {
                FileSource source(big);
                check(!files.upload("/workspace/big.bin", source), "upload");
              }},
             {&cpUp, [&] { sh("cp " + big + " " + filesDir + "/cp.bin"); }}});
    rotated(i, {{&oursDown, [&] {
                FileSink sink(root + "/down.bin");
                check(!files.download("/workspace/big.bin", sink), "download");
              }},
             {&cpDown, [&] { sh("cp " + filesDir + "/cp.bin " + root + "/cpdown.bin"); }}});
  }

  double mib = static_cast<double>(fileMiB);
  std::printf("workspace_bench: %d runs, medians (warm page cache; same disk for both)\n", runs);
  std::printf("  export 10,000 files   ours %.3f s   GNU tar %.3f s   ratio %.2fx (target <= 1.3x)\n",
              median(oursExport), median(tarExport), median(oursExport) / median(tarExport));
  std::printf("  import 10,000 files   ours %.3f s   GNU tar %.3f s   ratio %.2fx (target <= 1.3x)\n",
              median(oursImport), median(tarImport), median(oursImport) / median(tarImport));
  std::printf("  upload %ld MiB        ours %.0f MiB/s   cp %.0f MiB/s   %.0f%% of cp (library; target >= 70%%)\n",
              fileMiB, mib / median(oursUp), mib / median(cpUp), 100 * median(cpUp) / median(oursUp));
  std::printf("  download %ld MiB      ours %.0f MiB/s   cp %.0f MiB/s   %.0f%% of cp (library; target >= 70%%)\n",
              fileMiB, mib / median(oursDown), mib / median(cpDown), 100 * median(cpDown) / median(oursDown));
  fs::remove_all(root);
  return 0;
}
