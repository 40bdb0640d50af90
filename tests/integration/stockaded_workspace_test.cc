// The workspace over HTTP on the real stockaded (shared/API.md,
// "Workspace"): files, trees, watch, persist/restore and snapshots, driven by
// a real HTTP client; and the refusals, each beside its allowed neighbour:
// paths that escape the workspace (invalid_path, the host unchanged), names
// the policy protects or denies (permission_denied), requests without the
// token (401, nothing done), archives the importer refuses (400 naming the
// entry, the workspace unchanged), bodies over the limit (413).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/daemon_policy.h"
#include "tests/support/daemon_process.h"
#include "tests/support/tar_builder.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tree_listing.h"

namespace stockade::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json body(const HttpReply& r) { return json::parse(r.body); }
std::string codeOf(const HttpReply& r) {
  auto j = json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("code") ? j["code"].get<std::string>() : "";
}

// Percent-encodes a sandbox path for ?path= (every byte but unreserved ones).
std::string encoded(std::string_view path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The sandboxes' policy: the daemon's test policy with a read-denied
// "secret" and a write-denied ".env" in the workspace.
json sandboxPolicy() {
  json p = daemonTestPolicy();
  p["filesystem"]["denyRead"].push_back("secret");
  p["filesystem"]["denyWrite"] = json::array({".env"});
  return p;
}

// A connection of its own to the daemon's socket, for exchanges the test
// clients do not make (a pipelined request, a body cut short or stalled).
class RawConnection {
 public:
  explicit RawConnection(const std::string& socketPath) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", socketPath.c_str());
    connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  void shutdownWrite() { ::shutdown(fd_, SHUT_WR); }
  // Everything the daemon sends until it closes, or until `within` passes.
  std::string readAll(std::chrono::milliseconds within = std::chrono::seconds(20)) {
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + within;
    char buf[65536];
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return out;
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  bool connected_ = false;
};

// Every upload temporary under `dir` (none may outlive its upload).
std::vector<std::string> uploadTemporaries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().starts_with(".stockade-upload-")) out.push_back(e.path());
  return out;
}

class StockadedWorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }

  void start(std::vector<std::string> extra) {
    daemon_.reset();
    std::ofstream(dir_ / "baseline.json") << daemonTestPolicy().dump();
    DaemonProcess::Options o;
    o.extraArgs = {"--policy", dir_ / "baseline.json"};
    o.extraArgs.insert(o.extraArgs.end(), extra.begin(), extra.end());
    fs::create_directories(dir_.path() + "/d");
    daemon_ = std::make_unique<DaemonProcess>(dir_.path() + "/d", o);
    client_ = std::make_unique<HttpTestClient>(daemon_->client());
    auto r = client_->request("POST", "/v1/sandboxes", json{{"policy", sandboxPolicy()}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    id_ = body(r)["id"];
    workspace_ = body(r)["workspace"];
    fs::create_directories(outside_);
    std::ofstream(outside_ + "/victim") << "host file";
  }

  std::string files(std::string_view path, std::string_view route = "files") const {
    return "/v1/sandboxes/" + id_ + "/" + std::string(route) + "?path=" + encoded(path);
  }
  HttpReply put(std::string_view path, const std::string& data) { return client_->request("PUT", files(path), data); }
  HttpReply get(std::string_view path) { return client_->request("GET", files(path)); }

  TempDir dir_;
  std::string outside_ = dir_.path() + "/outside";  // beside the daemon, outside every workspace
  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<HttpTestClient> client_;
  std::string id_, workspace_;
};

TEST_F(StockadedWorkspaceTest, AFileIsUploadedDownloadedListedAndRemovedAndTheSandboxSeesIt) {
  auto r = put("/workspace/src/main.c", "int main() {}\n");
  ASSERT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(slurp(workspace_ + "/src/main.c"), "int main() {}\n");
  r = get("/workspace/src/main.c");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "int main() {}\n");
  EXPECT_EQ(r.headers["content-type"], "application/octet-stream");
  EXPECT_EQ(r.headers["content-length"], "14");
  // Replaced atomically, with no temporary left beside it.
  ASSERT_EQ(put("/workspace/src/main.c", "v2").status, 204);
  EXPECT_EQ(get("/workspace/src/main.c").body, "v2");
  json items = body(client_->request("GET", files("/workspace/src", "files/list")))["items"];
  EXPECT_EQ(items, json::parse(R"([{"name":"main.c","type":"file","path":"/workspace/src/main.c"}])"));
  EXPECT_EQ(body(client_->request("GET", files("/workspace/src/main.c", "files/exists")))["exists"], true);
  EXPECT_EQ(client_->request("POST", "/v1/sandboxes/" + id_ + "/files/mkdir", R"({"path":"/workspace/a/b"})").status, 204);
  EXPECT_TRUE(fs::is_directory(workspace_ + "/a/b"));

  // A sandboxed process reads what the API wrote, at the same /workspace path;
  // and the API reads what the process wrote there.
  r = client_->request("POST", "/v1/sandboxes/" + id_ + "/processes/run",
                       json{{"cmd", "cat /workspace/src/main.c && echo made > /workspace/src/by-child.txt"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body(r)["stdout"], "v2");
  EXPECT_EQ(get("/workspace/src/by-child.txt").body, "made\n");

  EXPECT_EQ(client_->request("DELETE", files("/workspace/src")).status, 204);
  EXPECT_FALSE(fs::exists(workspace_ + "/src"));
  EXPECT_EQ(body(client_->request("GET", files("/workspace/src", "files/exists")))["exists"], false);
  r = get("/workspace/src/main.c");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(codeOf(r), "not_found");
  r = get("/workspace/a");
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(codeOf(r), "is_directory");
}

// Every spelling of a path outside the workspace, through every file route:
// invalid_path, and nothing outside read or changed. A symlink inside that
// stays inside is the allowed neighbour.
TEST_F(StockadedWorkspaceTest, PathsThatEscapeTheWorkspaceAreInvalidPathAndTheHostIsUnchanged) {
  fs::create_directories(workspace_ + "/sub");
  std::ofstream(workspace_ + "/sub/ok.txt") << "inside";
  fs::create_symlink(outside_, workspace_ + "/out");                 // a directory symlink leading out
  fs::create_symlink(outside_ + "/victim", workspace_ + "/victim");  // a final symlink leading out
  fs::create_symlink("../../outside", workspace_ + "/rel");          // relative, leading out
  fs::create_symlink("sub", workspace_ + "/inner");                  // stays inside: allowed
  auto before = listTree(outside_);
  const std::vector<std::string> escapes = {
      "/workspace/../outside/victim",
      "/workspace/sub/../../outside/victim",
      outside_ + "/victim",  // absolute, elsewhere
      "/etc/hostname",
      std::string("/workspace/sub/a\0b", 18),  // a NUL byte
      "/workspace/out/victim",
      "/workspace/out/new",
      "/workspace/rel/victim",
      "workspace/sub/ok.txt",  // relative
      "/workspacex/ok.txt",
  };
  for (const std::string& path : escapes) {
    SCOPED_TRACE(path);
    auto r = get(path);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(codeOf(r), "invalid_path") << r.body;
    EXPECT_EQ(r.body.find("host file"), std::string::npos);
    r = put(path, "overwritten");
    EXPECT_EQ(codeOf(r), "invalid_path") << r.body;
    r = client_->request("DELETE", files(path));
    EXPECT_EQ(codeOf(r), "invalid_path") << r.body;
    r = client_->request("GET", files(path, "files/exists"));
    EXPECT_EQ(codeOf(r), "invalid_path") << r.body;
    r = client_->request("POST", "/v1/sandboxes/" + id_ + "/files/mkdir", json{{"path", path}}.dump());
    EXPECT_EQ(codeOf(r), "invalid_path") << r.body;
  }
  EXPECT_EQ(codeOf(client_->request("GET", files("/workspace/out", "files/list"))), "invalid_path");
  EXPECT_EQ(codeOf(client_->request("GET", files("/workspace/out", "files/watch"))), "invalid_path");
  EXPECT_EQ(codeOf(client_->request("GET", files("/workspace/out", "tree"))), "invalid_path");
  EXPECT_EQ(codeOf(client_->request("PUT", files("/workspace/out", "tree"), TarBuilder().file("f", "x").end().take())),
            "invalid_path");
  // A final symlink that leads out is followed neither for a read nor for a write.
  auto r = get("/workspace/victim");
  EXPECT_EQ(codeOf(r), "invalid_path") << r.body;
  EXPECT_EQ(r.body.find("host file"), std::string::npos);
  r = put("/workspace/victim", "replaced");
  EXPECT_EQ(codeOf(r), "invalid_path") << r.body;
  EXPECT_TRUE(fs::is_symlink(workspace_ + "/victim"));
  EXPECT_EQ(listTree(outside_), before);
  EXPECT_EQ(slurp(outside_ + "/victim"), "host file");
  // The neighbours: a symlink that stays inside, and the plain path.
  EXPECT_EQ(get("/workspace/inner/ok.txt").body, "inside");
  EXPECT_EQ(get("/workspace/sub/ok.txt").body, "inside");
  EXPECT_EQ(put("/workspace/inner/new.txt", "fine").status, 204);
  EXPECT_EQ(slurp(workspace_ + "/sub/new.txt"), "fine");
}

TEST_F(StockadedWorkspaceTest, WritesThePolicyDeniesArePermissionDeniedBesideAllowedNeighbours) {
  for (const char* path : {"/workspace/.env", "/workspace/.bashrc", "/workspace/app/.bashrc", "/workspace/.git/config",
                           "/workspace/.git/hooks/pre-commit", "/workspace/.vscode/settings.json"}) {
    SCOPED_TRACE(path);
    auto r = put(path, "payload");
    EXPECT_EQ(r.status, 403) << r.body;
    EXPECT_EQ(codeOf(r), "permission_denied") << r.body;
    EXPECT_FALSE(fs::exists(workspace_ + std::string(path).substr(10)));
  }
  std::ofstream(workspace_ + "/.env") << "KEY=1";
  EXPECT_EQ(codeOf(client_->request("DELETE", files("/workspace/.env"))), "permission_denied");
  EXPECT_EQ(slurp(workspace_ + "/.env"), "KEY=1");
  // Neighbours: names beside the protected ones (denyWrite ".env" is the
  // workspace's own .env, a path, not a name at any depth).
  for (const char* path : {"/workspace/env.txt", "/workspace/app/.env", "/workspace/bashrc",
                           "/workspace/git/config"}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(put(path, "fine").status, 204);
    EXPECT_EQ(slurp(workspace_ + std::string(path).substr(10)), "fine");
  }
}

TEST_F(StockadedWorkspaceTest, ReadsOfADenyReadPathArePermissionDeniedAndLeftOutOfTheTree) {
  fs::create_directories(workspace_ + "/secret");
  std::ofstream(workspace_ + "/secret/key") << "s3cr3t";
  std::ofstream(workspace_ + "/public.txt") << "hello";
  auto r = get("/workspace/secret/key");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(codeOf(r), "permission_denied");
  EXPECT_EQ(r.body.find("s3cr3t"), std::string::npos);
  EXPECT_EQ(codeOf(client_->request("GET", files("/workspace/secret", "files/list"))), "permission_denied");
  EXPECT_EQ(get("/workspace/public.txt").body, "hello");
  r = client_->request("GET", "/v1/sandboxes/" + id_ + "/tree");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "application/x-tar");
  EXPECT_NE(r.body.find("public.txt"), std::string::npos);
  EXPECT_EQ(r.body.find("s3cr3t"), std::string::npos);
  EXPECT_EQ(r.body.find("secret/key"), std::string::npos);
}

TEST_F(StockadedWorkspaceTest, RequestsWithoutTheTokenAre401AndChangeNothing) {
  HttpTestClient anon(daemon_->socketPath());
  std::ofstream(workspace_ + "/kept.txt") << "kept";
  auto before = listTree(workspace_);
  const std::string base = "/v1/sandboxes/" + id_;
  struct Case {
    const char* method;
    std::string target;
    std::string body;
  };
  const Case cases[] = {
      {"PUT", files("/workspace/new.txt"), "x"},
      {"GET", files("/workspace/kept.txt"), ""},
      {"DELETE", files("/workspace/kept.txt"), ""},
      {"GET", files("/workspace", "files/list"), ""},
      {"POST", base + "/files/mkdir", R"({"path":"/workspace/d"})"},
      {"GET", base + "/tree", ""},
      {"PUT", base + "/tree", TarBuilder().file("t.txt", "t").end().take()},
      {"POST", base + "/persist", R"({"path":"/workspace/app"})"},
      {"POST", base + "/snapshots", R"({"operationKey":"k"})"},
      {"GET", "/v1/snapshots?operationKey=k", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.method) + " " + c.target);
    auto r = anon.request(c.method, c.target, c.body);
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_EQ(r.body.find("kept"), std::string::npos);
    r = anon.request(c.method, c.target, c.body, {{"Authorization", "Bearer wrong-token-0123456789abcdef"}});
    EXPECT_EQ(r.status, 401) << r.body;
  }
  EXPECT_EQ(listTree(workspace_), before);
  EXPECT_EQ(get("/workspace/kept.txt").body, "kept");  // with the token
}

TEST_F(StockadedWorkspaceTest, ARefusedArchiveIs400NamingTheEntryAndTheWorkspaceIsUnchanged) {
  std::ofstream(workspace_ + "/existing.txt") << "before";
  auto before = listTree(workspace_);
  auto outsideBefore = listTree(outside_);
  struct Case {
    const char* what;
    std::string tar;
    const char* entry;
  };
  const Case cases[] = {
      {"a .. component", TarBuilder().file("ok.txt", "a").file("../../outside/evil", "x").end().take(), "../../outside/evil"},
      {"an absolute name", TarBuilder().file("/etc/evil", "x").end().take(), "/etc/evil"},
      {"a symlink out", TarBuilder().symlink("link", outside_).end().take(), "link"},
      {"a file through an archive's symlink",
       TarBuilder().symlink("dir", "sub").dir("sub").file("dir/f", "x").end().take(), "dir/f"},
      {"a device node", TarBuilder().entry({.name = "dev", .type = '3'}).end().take(), "dev"},
      {"a protected name", TarBuilder().file(".git/hooks/post-checkout", "#!/bin/sh").end().take(), ".git/hooks"},
      {"a bad checksum", TarBuilder().entry({.name = "c.txt", .size = 1, .checksumDelta = 1}, "c").end().take(),
       "malformed"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto r = client_->request("PUT", "/v1/sandboxes/" + id_ + "/tree", c.tar, {{"Content-Type", "application/x-tar"}});
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(codeOf(r), "invalid_archive") << r.body;
    EXPECT_NE(r.body.find(c.entry), std::string::npos) << r.body;
    EXPECT_EQ(listTree(workspace_), before);
  }
  EXPECT_EQ(listTree(outside_), outsideBefore);
  // The neighbour: a plain archive extracts, replacing what is there.
  auto good = TarBuilder().dir("app").file("app/main.py", "print(1)\n").file("existing.txt", "after").end().take();
  auto r = client_->request("PUT", "/v1/sandboxes/" + id_ + "/tree", good, {{"Content-Type", "application/x-tar"}});
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(slurp(workspace_ + "/app/main.py"), "print(1)\n");
  EXPECT_EQ(slurp(workspace_ + "/existing.txt"), "after");
  // And what GET /tree exports imports into another directory unchanged.
  r = client_->request("GET", files("/workspace/app", "tree"));
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(client_->request("PUT", files("/workspace/copy", "tree"), r.body).status, 204);
  EXPECT_EQ(listTree(workspace_ + "/copy"), listTree(workspace_ + "/app"));
}

TEST_F(StockadedWorkspaceTest, BodiesOverTheRawLimitAre413AndLeaveNoFile) {
  start({"--max-raw-body-bytes", "4096"});
  auto r = put("/workspace/big.bin", std::string(4097, 'x'));
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(codeOf(r), "too_large");
  EXPECT_NE(r.body.find("--max-raw-body-bytes"), std::string::npos) << r.body;
  // Chunked, so the size is only known as it arrives.
  std::string raw = "PUT " + files("/workspace/chunked.bin") + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                    daemon_->token() + "\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) raw += "800\r\n" + std::string(2048, 'y') + "\r\n";
  raw += "0\r\n\r\n";
  HttpTestClient rawClient(daemon_->socketPath());
  r = rawClient.raw(raw);
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(codeOf(r), "too_large");
  for (const auto& e : fs::recursive_directory_iterator(workspace_)) ADD_FAILURE() << "left behind: " << e.path();
  // The neighbour: exactly the limit.
  client_ = std::make_unique<HttpTestClient>(daemon_->client());
  EXPECT_EQ(put("/workspace/ok.bin", std::string(4096, 'z')).status, 204);
  EXPECT_EQ(fs::file_size(workspace_ + "/ok.bin"), 4096u);
}

TEST_F(StockadedWorkspaceTest, AnUploadOfAnnouncedLengthKeepsItsConnectionForThePipelinedRequestAfterIt) {
  // The head, the body and the next request in one write: the body's first
  // bytes arrive with its head, and the body is read exactly to its length.
  const std::string content = std::string(300 * 1024, 'a') + "end";
  std::string auth = "Authorization: Bearer " + daemon_->token() + "\r\n";
  std::string bytes = "PUT " + files("/workspace/piped.bin") + " HTTP/1.1\r\nHost: x\r\n" + auth +
                      "Content-Length: " + std::to_string(content.size()) + "\r\n\r\n" + content + "GET " +
                      files("/workspace/piped.bin") + " HTTP/1.1\r\nHost: x\r\n" + auth + "Connection: close\r\n\r\n";
  RawConnection c(daemon_->socketPath());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send(bytes));
  std::string replies = c.readAll();
  ASSERT_TRUE(replies.starts_with("HTTP/1.1 204")) << replies.substr(0, 300);
  auto second = replies.find("HTTP/1.1 200");
  ASSERT_NE(second, std::string::npos) << "the request after the upload was not answered: " << replies.substr(0, 300);
  EXPECT_TRUE(replies.ends_with("\r\n\r\n" + content)) << "the download is not the upload";
  EXPECT_EQ(slurp(workspace_ + "/piped.bin"), content);
}

TEST_F(StockadedWorkspaceTest, AnUploadCutShortOrStalledLeavesNoFileAndTheDaemonServesOn) {
  start({"--body-timeout-ms", "400"});
  std::string head = "PUT " + files("/workspace/cut.bin") + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                     daemon_->token() + "\r\nContent-Length: 100000\r\n\r\n";
  {
    // 10 of the 100,000 bytes announced, then the client's end closed.
    RawConnection c(daemon_->socketPath());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(head + "0123456789"));
    c.shutdownWrite();
    (void)c.readAll(std::chrono::seconds(5));
  }
  {
    // 10 bytes, then nothing: the body's timeout answers.
    RawConnection c(daemon_->socketPath());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(head + "0123456789"));
    std::string reply = c.readAll(std::chrono::seconds(10));
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 408")) << reply;
    EXPECT_NE(reply.find("--body-timeout-ms"), std::string::npos) << reply;
  }
  for (int i = 0; i < 100 && !uploadTemporaries(workspace_).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(uploadTemporaries(workspace_), std::vector<std::string>{});
  EXPECT_FALSE(fs::exists(workspace_ + "/cut.bin"));
  // The neighbour: a whole body is stored.
  EXPECT_EQ(put("/workspace/cut.bin", "whole").status, 204);
  EXPECT_EQ(slurp(workspace_ + "/cut.bin"), "whole");
}

TEST_F(StockadedWorkspaceTest, AFileOverTheFileLimitIs413AnnouncedOrCountedAndLeavesNothing) {
  start({"--max-file-bytes", "1000"});
  auto r = put("/workspace/f.bin", std::string(1001, 'x'));  // Content-Length: refused before the body
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_NE(r.body.find("--max-file-bytes"), std::string::npos) << r.body;
  std::string raw = "PUT " + files("/workspace/g.bin") + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                    daemon_->token() + "\r\nTransfer-Encoding: chunked\r\n\r\n" + "7d0\r\n" + std::string(2000, 'y') +
                    "\r\n0\r\n\r\n";
  HttpTestClient rawClient(daemon_->socketPath());
  r = rawClient.raw(raw);
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(codeOf(r), "too_large");
  for (const auto& e : fs::recursive_directory_iterator(workspace_)) ADD_FAILURE() << "left behind: " << e.path();
  client_ = std::make_unique<HttpTestClient>(daemon_->client());
  EXPECT_EQ(put("/workspace/ok.bin", std::string(1000, 'z')).status, 204);
}

TEST_F(StockadedWorkspaceTest, AnUploadPastThePolicysFileSizeIs413CountedAndLeavesNothing) {
  // The policy's limit is below --max-file-bytes: a body of announced length
  // passes the announced check and is refused as it is counted.
  json policy = sandboxPolicy();
  policy["limits"]["fileSizeBytes"] = 1000;
  auto made = client_->request("POST", "/v1/sandboxes", json{{"policy", policy}}.dump());
  ASSERT_EQ(made.status, 200) << made.body;
  const std::string id = body(made)["id"], workspace = body(made)["workspace"];
  auto target = [&](const std::string& name) { return "/v1/sandboxes/" + id + "/files?path=/workspace/" + name; };
  for (std::size_t size : {std::size_t{1001}, std::size_t{300000}}) {
    SCOPED_TRACE(size);
    HttpTestClient c = daemon_->client();
    auto r = c.request("PUT", target("big.bin"), std::string(size, 'x'));
    EXPECT_EQ(r.status, 413) << r.body;
    EXPECT_EQ(codeOf(r), "too_large") << r.body;
    EXPECT_EQ(uploadTemporaries(workspace), std::vector<std::string>{});
    EXPECT_FALSE(fs::exists(workspace + "/big.bin"));
  }
  // The neighbour: exactly the limit.
  HttpTestClient c = daemon_->client();
  EXPECT_EQ(c.request("PUT", target("ok.bin"), std::string(1000, 'z')).status, 204);
  EXPECT_EQ(slurp(workspace + "/ok.bin"), std::string(1000, 'z'));
}

TEST_F(StockadedWorkspaceTest, PersistAndRestoreOverHttpWithTheirErrors) {
  const std::string base = "/v1/sandboxes/" + id_;
  ASSERT_EQ(put("/workspace/app/main.py", "v1").status, 204);
  ASSERT_EQ(put("/workspace/app/node_modules/dep.js", "dep").status, 204);
  auto r = client_->request("POST", base + "/persist", R"({"path":"/workspace/app","timeout":30})");
  ASSERT_EQ(r.status, 200) << r.body;
  json saved = body(r);
  EXPECT_EQ(saved["sha256"].get<std::string>().size(), 64u);
  EXPECT_GT(saved["size"].get<std::uint64_t>(), 0u);
  ASSERT_EQ(put("/workspace/app/main.py", "v2").status, 204);
  r = client_->request("POST", base + "/restore", R"({"path":"/workspace/app"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body(r)["restored"], true);
  EXPECT_EQ(body(r)["sha256"], saved["sha256"]);
  EXPECT_EQ(slurp(workspace_ + "/app/main.py"), "v1");
  EXPECT_FALSE(fs::exists(workspace_ + "/app/node_modules/dep.js")) << "a default exclude was archived";

  r = client_->request("POST", base + "/restore", R"({"path":"/workspace/never"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body(r), json::parse(R"({"restored":false,"reason":"not_found"})"));
  for (const char* bad : {R"({"path":"/workspace/app","timeout":0})", R"({"path":"/workspace/app","timeout":1.5})",
                          R"({"path":"/workspace/app","timeout":"9"})", R"({"path":"/workspace/app","exclude":["a/b"]})",
                          R"({"path":"/workspace/app","extra":1})", R"({})"}) {
    SCOPED_TRACE(bad);
    r = client_->request("POST", base + "/persist", bad);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(codeOf(r), "invalid_argument");
  }
  EXPECT_EQ(codeOf(client_->request("POST", base + "/persist", R"({"path":"/workspace/../outside"})")), "invalid_path");

  // A flipped byte in the stored checkpoint: SANDBOX_DATA_CORRUPTED, the target untouched.
  ASSERT_EQ(put("/workspace/app/main.py", "v3").status, 204);
  int flipped = 0;
  for (const auto& e : fs::recursive_directory_iterator(daemon_->stateDir() + "/checkpoints")) {
    if (!e.is_regular_file() || e.file_size() < 1024) continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(600);
    char c = 0;
    f.read(&c, 1);
    f.seekp(600);
    c = static_cast<char>(c ^ 0x01);
    f.write(&c, 1);
    ++flipped;
  }
  ASSERT_EQ(flipped, 1);
  r = client_->request("POST", base + "/restore", R"({"path":"/workspace/app"})");
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(codeOf(r), "SANDBOX_DATA_CORRUPTED");
  EXPECT_EQ(slurp(workspace_ + "/app/main.py"), "v3");
}

TEST_F(StockadedWorkspaceTest, APersistOverTheLimitIsSandboxLimitExceeded) {
  start({"--max-persist-bytes", "65536"});
  const std::string base = "/v1/sandboxes/" + id_;
  ASSERT_EQ(put("/workspace/app/small.txt", "small").status, 204);
  EXPECT_EQ(client_->request("POST", base + "/persist", R"({"path":"/workspace/app"})").status, 200);
  std::string noise;
  for (int i = 0; i < 70000; ++i) noise += static_cast<char>((i * 7919) % 251);
  ASSERT_EQ(put("/workspace/app/big.bin", noise).status, 204);
  auto r = client_->request("POST", base + "/persist", R"({"path":"/workspace/app"})");
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(codeOf(r), "SANDBOX_LIMIT_EXCEEDED");
}

TEST_F(StockadedWorkspaceTest, ASnapshotIsFoundByItsKeyAndSeedsANewSandbox) {
  const std::string base = "/v1/sandboxes/" + id_;
  ASSERT_EQ(put("/workspace/data/a.txt", "alpha").status, 204);
  // A process writing while the snapshot is taken: it is frozen, then thawed.
  auto r = client_->request("POST", base + "/processes",
                            json{{"cmd", "i=0; while true; do i=$((i+1)); echo $i > " + workspace_ +
                                             "/data/counter; sleep 0.01; done"}}
                                .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  r = client_->request("POST", base + "/snapshots", R"({"operationKey":"op-1","timeout":60})");
  ASSERT_EQ(r.status, 200) << r.body;
  json snap = body(r);
  EXPECT_TRUE(snap["id"].get<std::string>().starts_with("snap_"));
  EXPECT_GE(snap["frozenProcesses"].get<int>(), 1) << snap.dump();
  // The same key answers with the same snapshot; lookup finds it.
  EXPECT_EQ(body(client_->request("POST", base + "/snapshots", R"({"operationKey":"op-1"})"))["id"], snap["id"]);
  r = client_->request("GET", "/v1/snapshots?operationKey=op-1");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body(r)["sha256"], snap["sha256"]);
  EXPECT_EQ(codeOf(client_->request("GET", "/v1/snapshots?operationKey=op-unknown")), "not_found");
  EXPECT_EQ(codeOf(client_->request("GET", "/v1/snapshots")), "invalid_argument");

  r = client_->request("POST", "/v1/sandboxes", json{{"policy", sandboxPolicy()}, {"fromSnapshot", snap["id"]}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  std::string copy = body(r)["workspace"];
  EXPECT_NE(copy, workspace_);
  EXPECT_EQ(slurp(copy + "/data/a.txt"), "alpha");
  EXPECT_TRUE(fs::exists(copy + "/data/counter"));
  r = client_->request("POST", "/v1/sandboxes",
                       json{{"policy", sandboxPolicy()}, {"fromSnapshot", "snap_00000000000000000000000000000000"}}.dump());
  EXPECT_EQ(r.status, 404) << r.body;
  r = client_->request("POST", "/v1/sandboxes", json{{"policy", sandboxPolicy()}, {"fromSnapshot", "../x"}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("fromSnapshot"), std::string::npos) << r.body;
  // The process was thawed: the counter moves on.
  std::string counter = slurp(workspace_ + "/data/counter");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_NE(slurp(workspace_ + "/data/counter"), counter);
}

TEST_F(StockadedWorkspaceTest, AWatchStreamsTheChangesMadeAfterItsFirstLine) {
  HttpTestClient watcher = daemon_->client();
  std::vector<json> lines;
  std::string pending;
  std::thread writer;
  auto r = watcher.stream("GET", files("/workspace", "files/watch") + "&recursive=true", [&](std::string_view chunk) {
    pending.append(chunk);
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      lines.push_back(json::parse(pending.substr(0, nl)));
      pending.erase(0, nl + 1);
      if (lines.size() == 1) {
        writer = std::thread([this] {
          HttpTestClient other = daemon_->client();
          other.request("PUT", files("/workspace/w/new.txt"), "hello");
        });
      }
    }
    for (const auto& l : lines)
      if (l["path"] == "/workspace/w/new.txt" && (l["type"] == "create" || l["type"] == "rename")) return false;
    return lines.size() < 50;
  });
  if (writer.joinable()) writer.join();
  EXPECT_EQ(r.status, 200);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0]["type"], "watching");
  bool seen = false;
  for (const auto& l : lines) seen = seen || l["path"] == "/workspace/w/new.txt";
  EXPECT_TRUE(seen) << json(lines).dump();
  EXPECT_EQ(codeOf(watcher.request("GET", files("/workspace/../outside", "files/watch"))), "invalid_path");
}

TEST_F(StockadedWorkspaceTest, AWatchWhoseQueueOverflowsSaysSoInTheStreamAndTheStreamGoesOn) {
  // A directory of 5,000 files moved into a recursive watch: the watch
  // reports what it holds as created, past its queue of 4,096 events
  // (WorkspaceOptions::maxWatchEvents) in one read.
  const std::string staged = dir_.path() + "/staged";
  fs::create_directories(staged);
  for (int i = 0; i < 5000; ++i) std::ofstream(staged + "/f" + std::to_string(i));
  HttpTestClient watcher = daemon_->client();
  std::vector<json> lines;
  std::string pending;
  bool overflowed = false, after = false;
  auto r = watcher.stream("GET", files("/workspace", "files/watch") + "&recursive=true", [&](std::string_view chunk) {
    pending.append(chunk);
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      lines.push_back(json::parse(pending.substr(0, nl)));
      pending.erase(0, nl + 1);
      const json& l = lines.back();
      if (lines.size() == 1) fs::rename(staged, workspace_ + "/moved");
      if (l["type"] == "overflow" && !overflowed) {
        overflowed = true;
        std::ofstream(workspace_ + "/after.txt") << "x";
      }
      if (overflowed && l["path"] == "/workspace/after.txt") after = true;
    }
    return !after && lines.size() < 20000;
  });
  EXPECT_EQ(r.status, 200);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0]["type"], "watching");
  auto overflow = std::find_if(lines.begin(), lines.end(), [](const json& l) { return l["type"] == "overflow"; });
  ASSERT_NE(overflow, lines.end()) << lines.size() << " lines and no overflow";
  EXPECT_NE((*overflow)["detail"].get<std::string>().find("dropped"), std::string::npos) << overflow->dump();
  EXPECT_LT(lines.size(), 5000u) << "more events came than the queue holds";
  EXPECT_TRUE(after) << "no event after the overflow: the stream did not go on";
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const json& l) { return l["type"] == "error"; }), 0);
}

}  // namespace
}  // namespace stockade::testing
