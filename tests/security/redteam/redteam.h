// The red-team suite: one case per escape technique, each run as the
// sandboxed program under one fixed policy (runner.cc) through the real
// `stockade run`. A case's inside() runs in the sandbox: it first does an
// allowed neighbour step (so a run that never started, or a sandbox that
// refuses everything, proves nothing), then the attack, and says whether the
// specific refusal it expects came back. The runner then checks the host:
// secrets never in the output, sentinel listeners on the host's loopback
// never reached, the trees outside the workspace unchanged, the filter's own
// denial event when the case names the call the filter must refuse, and the
// case's own host check.
#pragma once

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::proxy::testing {
class OriginServer;
}

namespace stockade::redteam {

// What the runner hands each case (key=value arguments; no secret values).
struct Context {
  std::string home, ws, outside;       // the fake home (secrets under .ssh/.aws), the workspace, a tree outside it
  int tcp4 = 0, tcp6 = 0, udp = 0;     // sentinel listeners on the host's 127.0.0.1 / ::1
  int origin = 0;                      // the HTTP origin on the host's 127.0.0.1 (reached through the proxy only)
  int hostPid = 0;                     // the runner's pid, in the host's pid namespace
  std::map<std::string, std::string> extra;  // anything a case's hostSetup added
};

struct Verdict {
  enum Result { kHeld, kEscaped, kUnproven } result;
  std::string detail;
};

inline Verdict held(std::string detail) { return {Verdict::kHeld, std::move(detail)}; }
inline Verdict escaped(std::string detail) { return {Verdict::kEscaped, std::move(detail)}; }
inline Verdict unproven(std::string detail) { return {Verdict::kUnproven, std::move(detail)}; }

inline std::string errnoName(int e) {
  const char* n = strerrorname_np(e);
  return n ? n : "errno " + std::to_string(e);
}

// The attack's call `rc` (-1 and errno on failure) must have failed with one
// of `want`: held. Succeeded: escaped. Failed otherwise: unproven (another
// layer, or another reason, answered; the case does not know it held).
inline Verdict refused(long rc, std::initializer_list<int> want, std::string_view what) {
  int e = errno;
  if (rc >= 0) return escaped(std::string(what) + " succeeded");
  for (int w : want)
    if (e == w) return held(std::string(what) + ": " + errnoName(e));
  std::string wanted;
  for (int w : want) wanted += (wanted.empty() ? "" : "|") + errnoName(w);
  return unproven(std::string(what) + ": " + errnoName(e) + ", expected " + wanted);
}

// The allowed neighbour: nullopt when it worked, else the unproven verdict.
inline std::optional<Verdict> neighbour(bool ok, std::string_view what) {
  if (ok) return std::nullopt;
  return unproven("the allowed neighbour failed: " + std::string(what) + " (" + errnoName(errno) + ")");
}

// Who a case is expected to fail for, until the named issue lands.
enum class Who { kNobody, kEveryone, kUnprivileged, kRoot };
struct Expectation {
  Who who = Who::kNobody;
  int issue = 0;
  std::string_view why;
};

namespace proxy_testing = ::stockade::proxy::testing;

// What a case's host-side hooks see: the test tree, and the arguments the
// case will get (a hook may add to inside.extra).
struct HostContext {
  std::string root, home, ws, outside;
  Context& inside;
  proxy_testing::OriginServer& origin;
  std::string policy;  // the policy the case runs under (JSON)
  // A terminal (its path) for the program's stdin, as the operator's own:
  // the run is then `stockade run -T` (no PTY of the sandbox's own), its
  // stdin opened from this path; stdout and stderr stay the runner's pipes.
  std::string stdinTerminal;
};

// Where the case's program runs: under `stockade run` (the default), or in a
// sandbox of a stockaded the runner starts for the case, listening on its
// unix socket or on loopback TCP (the sandbox is created with the fixed
// policy, which is also the daemon's --policy; the daemon's socket or port,
// token file and state dir go to the case as daemon_* arguments).
enum class RunIn { kStockadeRun, kDaemonUnix, kDaemonTcp };

struct Case {
  std::string_view category;
  std::string_view name;
  std::string_view technique;  // what the attack does, one line
  std::string_view reference;  // the public description it follows
  Verdict (*inside)(const Context&);
  // The syscall the seccomp filter itself must refuse (its `denial` event
  // must be in the audit log for the case to hold); empty when another layer refuses.
  std::string_view filterRefuses = {};
  Expectation expected = {};
  // The limit whose kill of the sandbox is the refusal this case expects
  // ("limits.memoryBytes"): the run ended by a signal and the audit's exit
  // event names that limit as its reason.
  std::string_view limitKill = {};
  // Host side, outside the sandbox: prepare before the run; after it, a
  // non-empty string says what escaped.
  void (*hostSetup)(HostContext&) = nullptr;
  std::string (*hostCheck)(HostContext&) = nullptr;
  RunIn runIn = RunIn::kStockadeRun;
};

// Host side of the memory cases (hostSetup): they attack memoryBytes alone,
// and filling 1 GiB takes CPU time -- 0.5 s on an idle host, ~2 s in a loaded
// CI run, where the fixed cpuSeconds of 2 then ended a balloon (SIGKILL)
// before its verdict. They run with room to spare (cpuSeconds 20);
// cpu-hog and cpu-fork-chain test the CPU limit.
void cpuHeadroom(HostContext& h);

// Cases register themselves at static initialisation (one table per category file).
bool registerCases(std::vector<Case> cases);
const std::vector<Case>& allCases();

// Host helper: every file beneath `dir` with its mode and content (what
// "unchanged" means).
std::map<std::string, std::string> listing(const std::string& dir);

// Inside helpers shared by the case files.
std::string readFile(const std::string& path, int* error = nullptr);  // "" and *error on failure
// A read that must find nothing: the secret's path is ENOENT (a masked
// directory) or an empty file (a masked file). What was read is printed, so
// the runner sees a secret that leaked even where the case misjudged.
Verdict readsNothing(const std::string& path, std::string_view what);
bool writeFile(const std::string& path, std::string_view content, int flags = 0);
int connectTcp(const char* address, int port, int family = 0);  // fd, or -1 with errno (0: IPv4 unless ':' in address)
// An HTTP exchange with the sandbox's proxy (127.0.0.1:3128): sends `request`
// on a fresh connection and returns what came back until close or 5 s.
std::string proxyExchange(std::string_view request, std::size_t max = 1 << 20);

}  // namespace stockade::redteam
