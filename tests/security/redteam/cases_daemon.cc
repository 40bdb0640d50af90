// The daemon's API (issue 12), attacked from a sandbox it runs: the runner
// starts a stockaded for each case (RunIn::kDaemon*), creates a sandbox in it
// with the fixed policy and runs the case there; its socket or port, token
// file and state directory come as daemon_* arguments. The host's file API
// (issue 13) is attacked in cases_files.cc, through the library's Workspace
// that the daemon's file routes call.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>

#include "tests/security/redteam/redteam.h"

namespace stockade::redteam {
namespace {

std::optional<Verdict> needsDaemon(const Context& c, const char* key) {
  if (c.extra.count(key)) return std::nullopt;
  return unproven(std::string("no daemon to attack: the runner started none for this case (") + key + " unset)");
}

Verdict daemonSocket(const Context& c) {
  if (auto u = needsDaemon(c, "daemon_socket")) return *u;
  const std::string& path = c.extra.at("daemon_socket");
  if (auto n = neighbour(writeFile(c.ws + "/ok", "ok"), "write ws/ok")) return *n;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return refused(-1, {EPERM}, "socket(AF_UNIX) for the daemon's socket");
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), std::min(path.size(), sizeof sa.sun_path - 1));
  return refused(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), {EACCES, ENOENT, ECONNREFUSED},
                 "connect(the daemon's socket)");
}

Verdict daemonTcp(const Context& c) {
  if (auto u = needsDaemon(c, "daemon_port")) return *u;
  if (auto n = neighbour(writeFile(c.ws + "/ok", "ok"), "write ws/ok")) return *n;
  return refused(connectTcp("127.0.0.1", std::atoi(c.extra.at("daemon_port").c_str())), {EACCES, ECONNREFUSED},
                 "connect(the daemon's loopback port)");
}

Verdict daemonToken(const Context& c) {
  if (auto u = needsDaemon(c, "daemon_token_file")) return *u;
  if (auto n = neighbour(readFile(c.home + "/notes.txt") == "HOME-NOTES\n", "read home/notes.txt")) return *n;
  return readsNothing(c.extra.at("daemon_token_file"), "read the daemon's token file");
}

Verdict daemonState(const Context& c) {
  if (auto u = needsDaemon(c, "daemon_state_dir")) return *u;
  if (auto n = neighbour(writeFile(c.ws + "/ok", "ok"), "write ws/ok")) return *n;
  return refused(writeFile(c.extra.at("daemon_state_dir") + "/ledger.db", "x", O_WRONLY | O_TRUNC) ? 0 : -1,
                 {EROFS, EACCES, ENOENT}, "write the daemon's ledger");
}

const bool registered = registerCases({
    {"daemon-api", "daemon-socket-from-inside", "connect to the daemon's unix socket from a sandbox", "local control sockets (docker.sock)", daemonSocket, {}, {}, {}, nullptr, nullptr, RunIn::kDaemonUnix},
    {"daemon-api", "daemon-tcp-from-inside", "connect to the daemon's loopback port from a sandbox", "loopback APIs", daemonTcp, {}, {}, {}, nullptr, nullptr, RunIn::kDaemonTcp},
    {"daemon-api", "daemon-token-file", "read the daemon's bearer token", "credential theft", daemonToken, {}, {}, {}, nullptr, nullptr, RunIn::kDaemonUnix},
    {"daemon-api", "daemon-state-dir", "write the daemon's ledger", "state tampering", daemonState, {}, {}, {}, nullptr, nullptr, RunIn::kDaemonUnix},
});

}  // namespace
}  // namespace stockade::redteam
