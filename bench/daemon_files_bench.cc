// daemon_files_bench: the workspace's routes through stockaded over its unix
// socket, with the client `stockade cp` uses, against the plain tools on the
// same disk in the same run (not a test; issue 13's targets):
//   1. a large file's upload and download (PUT/GET .../files) against cp of
//      the same bytes: >= 70% of cp's throughput;
//   2. a tree's export and import (GET/PUT .../tree) against GNU tar -c / -x
//      of the same tree: <= 1.3x tar's time. The tree: 5,000 files of 1-8
//      KiB in 50 directories and 4 files of 32 MiB.
// Columns are interleaved, each round starting at another column. With
// --baseline STOCKADED (another build of the daemon, e.g. main's), that one
// is measured in the same rounds too, for a before/after on equal terms.
// Prints the load average before and after, the medians, the ratios and each
// daemon's peak RSS growth.
//
// usage: build/bench/daemon_files_bench [RUNS] [FILE_MIB] [--baseline STOCKADED]
//        (defaults 5 and 1024; under /var/tmp)
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_support.h"

namespace {

namespace fs = std::filesystem;
using namespace stockade::bench;
using nlohmann::json;

// A policy with every field spelled out: the workspace writable, nothing else.
const char* kPolicy = R"({
  "filesystem": {"denyRead": [], "allowRead": [], "allowWrite": ["."], "denyWrite": []},
  "network": {"allowedDomains": [], "deniedDomains": [], "allowUnixSockets": [], "allowLocalBinding": false},
  "env": {"allow": ["PATH"]},
  "limits": {"memoryBytes": 0, "pids": 0, "cpuSeconds": 0, "fileSizeBytes": 0}})";

// One daemon under test, its sandbox, and its columns' samples.
struct Subject {
  std::string name;
  std::unique_ptr<Daemon> daemon;
  std::string id, workspace;
  std::size_t rssBefore = 0;
  std::vector<double> up, down, exportTree, importTree;
  double cpuUp = 0, cpuDown = 0;  // the daemon's CPU seconds, all rounds

  std::string route(const std::string& what) const { return "/v1/sandboxes/" + id + "/" + what; }

  void upload(const std::string& from, const std::string& to, std::uint64_t size, const std::string& type) {
    int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    check(fd >= 0, "open " + from);
    auto r = daemon->http().upload("PUT", route(to), type, size, [&](char* buf, std::size_t n) {
      ssize_t got = ::read(fd, buf, n);
      return got > 0 ? static_cast<std::size_t>(got) : 0;
    });
    ::close(fd);
    check(r.status == 204, name + " PUT " + to + ": " + r.body);
  }
  std::uint64_t download(const std::string& from, const std::string& to) {
    int fd = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    check(fd >= 0, "open " + to);
    std::uint64_t got = 0;
    auto r = daemon->http().stream("GET", route(from), {}, [&](std::string_view piece) {
      got += piece.size();
      return ::write(fd, piece.data(), piece.size()) == static_cast<ssize_t>(piece.size());
    });
    ::close(fd);
    check(r.status == 200, name + " GET " + from);
    return got;
  }
};

std::string percentOf(const std::vector<double>& ours, const std::vector<double>& baseline) {
  char out[32];
  std::snprintf(out, sizeof out, "%.0f%%", 100 * median(baseline) / median(ours));
  return out;
}

// The bench's directory, removed however the bench ends (GiBs of files on
// a disk others share).
std::string& benchDir() {
  static std::string dir;
  return dir;
}

int run(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    check(false, e.what());  // exits: the directory goes with it
  }
  return 1;
}

namespace {

int run(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string baseline;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--baseline" && i + 1 < argc) {
      baseline = argv[++i];
    } else {
      positional.push_back(a);
    }
  }
  const int runs = positional.size() > 0 ? std::max(1, std::atoi(positional[0].c_str())) : 5;
  const long fileMiB = positional.size() > 1 ? std::max(1L, std::atol(positional[1].c_str())) : 1024;
  const std::string dir = benchDir() = "/var/tmp/stockade-files-bench-" + std::to_string(::getpid());
  fs::create_directories(dir);
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(benchDir(), ec);
  });
  { std::ofstream(dir + "/baseline.json") << kPolicy; }
  std::printf("daemon_files_bench: %d runs, a %ld MiB file, a tree of 5,000 small and 4 large files; load average "
              "before: %s\n",
              runs, fileMiB, load().c_str());

  std::vector<std::unique_ptr<Subject>> subjects;
  auto add = [&](const std::string& name, const std::string& binary) {
    auto s = std::make_unique<Subject>();
    s->name = name;
    s->daemon = std::make_unique<Daemon>(binary, dir + "/" + name, std::vector<std::string>{"--policy", dir + "/baseline.json"});
    json created = json::parse(s->daemon->createSandbox(kPolicy));
    s->id = created["id"];
    s->workspace = created["workspace"];
    subjects.push_back(std::move(s));
  };
  add("stockaded", STOCKADED_PATH);
  if (!baseline.empty()) add("baseline", baseline);

  // 1. A large file: the source on the same disk as the workspaces.
  const std::string big = dir + "/big.bin";
  writeRandomFile(big, fileMiB);
  const std::uint64_t size = static_cast<std::uint64_t>(fileMiB) << 20;
  for (auto& s : subjects) s->rssBefore = statusKiB(s->daemon->pid(), "VmRSS");
  // cp writes where the first daemon does, and both directions' copies go to
  // one file: the disk holds the source, one file per workspace and one
  // copy out (this machine's disk is shared and nearly full).
  const std::string cpTarget = subjects[0]->workspace + "/big.bin", out = dir + "/down.bin";
  std::vector<double> cpUp, cpDown;
  for (int i = 0; i < runs; ++i) {
    std::vector<Column> up{{&cpUp, [&] { sh("cp " + big + " " + cpTarget); }}};
    std::vector<Column> down{{&cpDown, [&] { sh("cp " + cpTarget + " " + out); }}};
    for (auto& s : subjects) {
      Subject* p = s.get();
      up.push_back({&p->up, [=] {
                      double cpu = cpuSeconds(p->daemon->pid());
                      p->upload(big, "files?path=/workspace/big.bin", size, "application/octet-stream");
                      p->cpuUp += cpuSeconds(p->daemon->pid()) - cpu;
                    }});
      down.push_back({&p->down, [=] {
                        double cpu = cpuSeconds(p->daemon->pid());
                        check(p->download("files?path=/workspace/big.bin", out) == size, "download size");
                        p->cpuDown += cpuSeconds(p->daemon->pid()) - cpu;
                      }});
    }
    rotated(i, up);
    rotated(i, down);
  }
  for (auto& s : subjects) fs::remove(s->workspace + "/big.bin");
  fs::remove(big);
  fs::remove(out);

  // 2. A tree, placed in each workspace as /workspace/tree (and beside them
  // for tar): 5,000 small files and 4 large ones.
  const std::string tree = dir + "/tree";
  writeSmallTree(tree, 50, 100);
  for (int k = 0; k < 4; ++k) writeRandomFile(tree + "/large" + std::to_string(k) + ".bin", 32, 100 + k);
  for (auto& s : subjects) sh("cp -a " + tree + " " + s->workspace + "/tree");
  std::vector<double> tarC, tarX;
  for (int i = 0; i < runs; ++i) {
    std::vector<Column> c{{&tarC, [&] { sh("tar -cf " + dir + "/gnu.tar -C " + tree + " ."); }}};
    std::vector<Column> x{{&tarX, [&] {
                             fs::create_directories(dir + "/x");
                             sh("tar -xf " + dir + "/gnu.tar -C " + dir + "/x");
                           }}};
    for (auto& s : subjects) {
      Subject* p = s.get();
      const std::string archive = dir + "/" + p->name + ".tar";
      c.push_back({&p->exportTree, [=] { check(p->download("tree?path=/workspace/tree", archive) > 0, "export"); }});
      x.push_back({&p->importTree, [=] {
                     p->upload(archive, "tree?path=/workspace/in", fs::file_size(archive), "application/x-tar");
                   }});
    }
    rotated(i, c);
    rotated(i, x);
    fs::remove_all(dir + "/x");
    for (auto& s : subjects) fs::remove_all(s->workspace + "/in");
  }

  double mib = static_cast<double>(fileMiB);
  std::printf("medians (warm page cache; the same disk throughout):\n");
  std::printf("  cp %ld MiB in          %6.0f MiB/s\n", fileMiB, mib / median(cpUp));
  std::printf("  cp %ld MiB out         %6.0f MiB/s\n", fileMiB, mib / median(cpDown));
  std::printf("  tar -cf of the tree    %6.3f s\n", median(tarC));
  std::printf("  tar -xf of the tree    %6.3f s\n", median(tarX));
  for (auto& s : subjects) {
    std::size_t hwm = statusKiB(s->daemon->pid(), "VmHWM");
    std::printf("%s:\n", s->name.c_str());
    std::printf("  upload   %6.0f MiB/s   %s of cp (target >= 70%%)\n", mib / median(s->up),
                percentOf(s->up, cpUp).c_str());
    std::printf("  download %6.0f MiB/s   %s of cp (target >= 70%%)\n", mib / median(s->down),
                percentOf(s->down, cpDown).c_str());
    std::printf("  the daemon's CPU per GiB: upload %.2f s, download %.2f s\n", s->cpuUp * 1024 / mib / runs,
                s->cpuDown * 1024 / mib / runs);
    std::printf("  export (GET .../tree)  %6.3f s   %.2fx tar -c (target <= 1.3x)\n", median(s->exportTree),
                median(s->exportTree) / median(tarC));
    std::printf("  import (PUT .../tree)  %6.3f s   %.2fx tar -x (target <= 1.3x)\n", median(s->importTree),
                median(s->importTree) / median(tarX));
    std::printf("  VmRSS before %zu KiB, VmHWM after %zu KiB (+%zu KiB)\n", s->rssBefore, hwm,
                hwm > s->rssBefore ? hwm - s->rssBefore : 0);
  }
  std::printf("load average after: %s\n", load().c_str());
  subjects.clear();
  return 0;
}

}  // namespace
