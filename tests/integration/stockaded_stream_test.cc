// Large files stream through the real stockaded in bounded memory: a 2 GiB
// upload and download by real curl (its upload chunked, so through the
// server's parser), a 2 GiB upload of announced length by the CLI's client
// (read straight off the socket), the bytes generated and hashed on the fly
// (no 2 GiB file in the repository, none on the client's side), with the
// daemon's peak resident memory (VmHWM) growing by less than 64 MiB.
// About 10-30 s on a loaded 2-core machine (ctest label "large").
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/statvfs.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/cli/http_client.h"
#include "tests/support/daemon_policy.h"
#include "tests/support/daemon_process.h"
#include "tests/support/sanitizer.h"
#include "tests/support/temp_dir.h"

namespace stockade::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::uint64_t kSize = std::uint64_t{2} << 30;
constexpr std::uint64_t kMaxGrowthKiB = 64 * 1024;

// A field of /proc/PID/status in KiB.
std::uint64_t statusKiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(field + ":")) return std::stoull(line.substr(field.size() + 1));
  return 0;
}

// Deterministic bytes that are not all alike (a corrupted or reordered
// piece changes the hash).
class Generator {
 public:
  void fill(std::string& buf) {
    for (std::size_t i = 0; i + 8 <= buf.size(); i += 8) {
      state_ ^= state_ << 13;
      state_ ^= state_ >> 7;
      state_ ^= state_ << 17;
      std::memcpy(&buf[i], &state_, 8);
    }
  }

 private:
  std::uint64_t state_ = 0x9E3779B97F4A7C15ull;
};

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  void add(const char* p, std::size_t n) { EVP_DigestUpdate(ctx_, p, n); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx_, md, &len);
    std::string out;
    char h[3];
    for (unsigned i = 0; i < len; ++i) {
      std::snprintf(h, sizeof h, "%02x", md[i]);
      out += h;
    }
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

std::string curlBase(const DaemonProcess& d) {
  return "curl -sS --unix-socket " + d.socketPath() + " -H 'Authorization: Bearer " + d.token() + "'";
}

TEST(StockadedStreamTest, ATwoGibUploadAndDownloadKeepTheDaemonsMemoryBounded) {
  // A curl that stops early (the daemon refused) is a failure to report,
  // not a SIGPIPE that ends the test binary without a word.
  ::signal(SIGPIPE, SIG_IGN);
  TempDir dir;
  struct statvfs disk {};
  ASSERT_EQ(::statvfs(dir.path().c_str(), &disk), 0);
  const std::uint64_t freeBytes = static_cast<std::uint64_t>(disk.f_bavail) * disk.f_frsize;
  ASSERT_GT(freeBytes, kSize + (std::uint64_t{256} << 20))
      << "the disk under " << dir.path() << " has " << (freeBytes >> 20) << " MiB free; this test stores a "
      << (kSize >> 20) << " MiB file (one at a time)";
  std::ofstream(dir / "baseline.json") << daemonTestPolicy().dump();
  DaemonProcess::Options o;
  o.extraArgs = {"--policy", dir / "baseline.json"};
  DaemonProcess d(dir, o);
  auto c = d.client();
  auto r = c.request("POST", "/v1/sandboxes", json{{"policy", daemonTestPolicy()}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string id = json::parse(r.body)["id"];
  const std::string workspace = json::parse(r.body)["workspace"];
  const std::string url = "'http://localhost/v1/sandboxes/" + id + "/files?path=/workspace/big.bin'";
  const std::uint64_t rssBefore = statusKiB(d.pid(), "VmRSS");
  ASSERT_GT(rssBefore, 0u);

  // Upload: generated into curl's stdin (chunked), hashed as it goes.
  std::string status = dir / "upload.status";
  FILE* up = ::popen((curlBase(d) + " -T - -o /dev/null -w '%{http_code}' " + url + " > " + status).c_str(), "w");
  ASSERT_NE(up, nullptr);
  Generator gen;
  Sha256 sent;
  std::string buf(1u << 20, '\0');
  for (std::uint64_t done = 0; done < kSize; done += buf.size()) {
    gen.fill(buf);
    sent.add(buf.data(), buf.size());
    ASSERT_EQ(std::fwrite(buf.data(), 1, buf.size(), up), buf.size()) << "curl stopped reading at " << done;
  }
  ASSERT_EQ(::pclose(up), 0);
  std::ifstream(status) >> status;
  ASSERT_EQ(status, "204");
  const std::string sentHash = sent.hex();
  EXPECT_EQ(fs::file_size(workspace + "/big.bin"), kSize);
  const std::uint64_t afterUpload = statusKiB(d.pid(), "VmHWM");

  // Download: read from curl's stdout, hashed as it comes.
  FILE* down = ::popen((curlBase(d) + " " + url).c_str(), "r");
  ASSERT_NE(down, nullptr);
  Sha256 got;
  std::uint64_t received = 0;
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), down)) > 0; received += n) got.add(buf.data(), n);
  ASSERT_EQ(::pclose(down), 0);
  EXPECT_EQ(received, kSize);
  EXPECT_EQ(got.hex(), sentHash);
  const std::uint64_t afterDownload = statusKiB(d.pid(), "VmHWM");

  // Upload of announced length (Content-Length), by the client `stockade cp`
  // uses; the first file removed first (the disk holds one at a time).
  fs::remove(workspace + "/big.bin");
  {
    cli::HttpClient cp(cli::Endpoint{d.socketPath(), "", 0, "unix:" + d.socketPath()}, d.token());
    Generator again;
    Sha256 sentAgain;
    std::uint64_t produced = 0;
    std::string piece;
    auto put = cp.upload("PUT", "/v1/sandboxes/" + id + "/files?path=/workspace/again.bin", "application/octet-stream",
                         kSize, [&](char* out, std::size_t n) -> std::size_t {
                           if (produced == kSize) return 0;
                           piece.resize(std::min<std::uint64_t>(n, kSize - produced) & ~std::size_t{7});
                           again.fill(piece);
                           sentAgain.add(piece.data(), piece.size());
                           std::memcpy(out, piece.data(), piece.size());
                           produced += piece.size();
                           return piece.size();
                         });
    ASSERT_EQ(put.status, 204) << put.body;
    EXPECT_EQ(sentAgain.hex(), sentHash) << "the generator is not the one curl's upload used";
  }
  EXPECT_EQ(fs::file_size(workspace + "/again.bin"), kSize);
  {
    std::ifstream in(workspace + "/again.bin", std::ios::binary);
    Sha256 stored;
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
      stored.add(buf.data(), static_cast<std::size_t>(in.gcount()));
    EXPECT_EQ(stored.hex(), sentHash) << "the upload of announced length was stored altered";
  }
  const std::uint64_t afterLengthUpload = statusKiB(d.pid(), "VmHWM");

  std::printf("daemon VmRSS before %llu KiB, VmHWM after upload %llu KiB, after download %llu KiB, after the upload "
              "of announced length %llu KiB\n",
              static_cast<unsigned long long>(rssBefore), static_cast<unsigned long long>(afterUpload),
              static_cast<unsigned long long>(afterDownload), static_cast<unsigned long long>(afterLengthUpload));
  if (!kSanitized) {  // tests/support/sanitizer.h: the daemon's sanitizer memory is in its RSS
    EXPECT_LT(afterUpload - rssBefore, kMaxGrowthKiB) << "the upload was held in memory";
    EXPECT_LT(afterDownload - rssBefore, kMaxGrowthKiB) << "the download was held in memory";
    EXPECT_LT(afterLengthUpload - rssBefore, kMaxGrowthKiB) << "the upload of announced length was held in memory";
  }
}

}  // namespace
}  // namespace stockade::testing
