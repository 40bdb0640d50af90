// Re-deriving the rules and comparing them with the admission baseline runs
// before every spawn. Target: derive + compare under 50 us for a policy of
// 50 paths. The baseline printed beside it is one bare lstat() per path, the
// least any derivation touching the filesystem must do.
#include <benchmark/benchmark.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stockade/rules.h"

namespace {

namespace fs = std::filesystem;

struct Fixture {
  std::string root;
  std::string policyJson;
  std::vector<std::string> paths;

  Fixture() {
    root = (fs::temp_directory_path() / ("stockade-bench-" + std::to_string(::getpid()))).string();
    fs::create_directories(root + "/home");
    nlohmann::json denyRead = nlohmann::json::array(), allowRead = nlohmann::json::array(),
                   allowWrite = nlohmann::json::array(), denyWrite = nlohmann::json::array();
    for (int i = 0; i < 20; ++i) denyRead.push_back(root + "/secrets/s" + std::to_string(i));
    for (int i = 0; i < 5; ++i) allowRead.push_back(root + "/secrets/s" + std::to_string(i) + "/public");
    for (int i = 0; i < 10; ++i) {
      std::string w = root + "/work/w" + std::to_string(i);
      fs::create_directories(w + "/src");
      std::ofstream(w + "/src/main.c") << "int main(){}\n";
      std::ofstream(w + "/README") << "x\n";
      allowWrite.push_back(w);
    }
    fs::create_directories(root + "/work/w0/.git/hooks");
    std::ofstream(root + "/work/w0/.git/HEAD") << "ref: refs/heads/main\n";
    for (int i = 0; i < 15; ++i) denyWrite.push_back(root + "/work/w" + std::to_string(i % 10) + "/.env" + std::to_string(i));
    for (const auto* list : {&denyRead, &allowRead, &allowWrite, &denyWrite})
      for (const auto& p : *list) paths.push_back(p.get<std::string>());
    nlohmann::json policy = {
        {"filesystem", {{"denyRead", denyRead}, {"allowRead", allowRead}, {"allowWrite", allowWrite}, {"denyWrite", denyWrite}}},
        {"network", {{"allowedDomains", {"github.com", "*.github.com", "registry.npmjs.org"}}, {"deniedDomains", {"gist.github.com"}}}},
        {"env", {{"allow", {"PATH", "HOME", "LANG", "TERM"}}}}};
    policyJson = policy.dump();
  }
  ~Fixture() { fs::remove_all(root); }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

stockade::DerivedRules deriveOrDie(const stockade::SandboxPolicy& p, const stockade::DeriveContext& ctx) {
  auto r = stockade::derive(p, ctx);
  if (auto* e = std::get_if<stockade::PolicyError>(&r)) throw std::runtime_error(e->text());
  return std::get<stockade::DerivedRules>(std::move(r));
}

// No writable tree is walked: its contents do not change the cost.
void BM_DeriveAndCompare50Paths(benchmark::State& state) {
  auto policy = stockade::SandboxPolicy::fromJson(fixture().policyJson);
  stockade::DeriveContext ctx{.home = fixture().root + "/home", .cwd = fixture().root, .tmpdir = std::nullopt};
  const stockade::DerivedRules baseline = deriveOrDie(policy, ctx);
  const std::string baselineFingerprint = baseline.fingerprint();
  for (auto _ : state) {
    stockade::DerivedRules live = deriveOrDie(policy, ctx);
    bool same = live == baseline;  // the fast path: nothing changed
    if (!same) benchmark::DoNotOptimize(stockade::narrowing(baseline, live));
    benchmark::DoNotOptimize(same);
  }
  state.counters["paths"] = static_cast<double>(fixture().paths.size());
}
BENCHMARK(BM_DeriveAndCompare50Paths)->Unit(benchmark::kMicrosecond);

void BM_NarrowingCheck50Paths(benchmark::State& state) {
  auto policy = stockade::SandboxPolicy::fromJson(fixture().policyJson);
  stockade::DeriveContext ctx{.home = fixture().root + "/home", .cwd = fixture().root, .tmpdir = std::nullopt};
  const stockade::DerivedRules a = deriveOrDie(policy, ctx), b = deriveOrDie(policy, ctx);
  for (auto _ : state) benchmark::DoNotOptimize(stockade::narrowing(a, b));
}
BENCHMARK(BM_NarrowingCheck50Paths)->Unit(benchmark::kMicrosecond);

void BM_Fingerprint(benchmark::State& state) {
  auto policy = stockade::SandboxPolicy::fromJson(fixture().policyJson);
  stockade::DeriveContext ctx{.home = fixture().root + "/home", .cwd = fixture().root, .tmpdir = std::nullopt};
  const stockade::DerivedRules a = deriveOrDie(policy, ctx);
  for (auto _ : state) benchmark::DoNotOptimize(a.fingerprint());
}
BENCHMARK(BM_Fingerprint)->Unit(benchmark::kMicrosecond);

// Baseline: one lstat per policy path.
void BM_BaselineLstat50Paths(benchmark::State& state) {
  const auto& paths = fixture().paths;
  for (auto _ : state) {
    struct stat st {};
    for (const auto& p : paths) benchmark::DoNotOptimize(::lstat(p.c_str(), &st));
  }
}
BENCHMARK(BM_BaselineLstat50Paths)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
