#include "src/process/foreground.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <future>
#include <vector>

#include "policy/domain.h"
#include "src/audit/event.h"

namespace stockade::process {

std::optional<std::string> resolveProblem(const std::string& name, const std::string& address) {
  if (!policy::normaliseHostName(name) || policy::canonicalIp(name))
    return audit::printable(name) + " is not a host name; give one such as origin.test";
  std::string bare = address.size() > 2 && address.front() == '[' && address.back() == ']'
                         ? address.substr(1, address.size() - 2)
                         : address;
  if (!policy::canonicalIp(bare))
    return audit::printable(address) + " is not an IPv4 or IPv6 address, such as 127.0.0.1 or ::1";
  return std::nullopt;
}

std::optional<std::string> addResolveFlag(const std::string& value, std::map<std::string, std::string>& into) {
  auto eq = value.find('=');
  if (eq == std::string::npos)
    return "--resolve \"" + value + "\": expected HOST=ADDR, such as --resolve " +
           (resolveProblem(value, "127.0.0.1") ? std::string("origin.test") : value) + "=127.0.0.1";
  std::string host = value.substr(0, eq), address = value.substr(eq + 1);
  if (auto problem = resolveProblem(host, address)) return "--resolve \"" + value + "\": " + *problem;
  into[host] = address;
  return std::nullopt;
}

namespace {

// Every byte to `fd` (the caller's stdout), retrying short writes.
void writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader went away: the output has nowhere to go
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The attributes of each of fds 0-2 that is a terminal, once per terminal
// (`window`: and its size, when the child gets the terminal itself).
std::vector<platform::SavedTerminal> saveTerminals(platform::SavedTerminal::Window window) {
  std::vector<platform::SavedTerminal> saved;
  struct stat seen[3];
  int count = 0;
  for (int fd = 0; fd < 3; ++fd) {
    struct stat st;
    if (!platform::isTerminal(fd) || ::fstat(fd, &st) != 0) continue;
    bool same = false;
    for (int i = 0; i < count; ++i) same = same || (seen[i].st_rdev == st.st_rdev);
    if (same) continue;
    seen[count++] = st;
    if (auto t = platform::SavedTerminal::save(fd, window)) saved.push_back(std::move(*t));
  }
  return saved;
}

}  // namespace

std::variant<ForegroundOutcome, platform::SpawnError> runForeground(
    Runtime& runtime, ForegroundRequest r, const std::function<void(const ForegroundStarted&)>& started) {
  proxy::RulesProvider network;
  if (!r.rules.network().allowedDomains.empty()) {
    auto rules = std::make_shared<const DerivedRules::Network>(r.rules.network());
    network = [rules] { return rules; };
  }
  std::map<std::string, std::string> resolve;
  for (const auto& [name, address] : r.resolve)
    resolve[name] = address.size() > 2 && address.front() == '[' ? address.substr(1, address.size() - 2) : address;

  // Whatever the child does to a terminal it is given (-T), or to the
  // caller's while it is raw (-t), is undone when this returns.
  std::vector<platform::SavedTerminal> terminals =
      saveTerminals(r.pty ? platform::SavedTerminal::Window::kKeep : platform::SavedTerminal::Window::kRestore);

  auto ended = std::make_shared<std::promise<Ending>>();
  // The loop thread's watches of the caller's signals and stdin, and the
  // signal received: all on the loop thread, where the end unwatches them
  // before it hands the outcome over (no round trip to the loop after it).
  struct Relay {
    bool ended = false;
    bool signalWatched = false;
    bool stdinWatched = false;
    std::optional<int> received;
  };
  auto relay = std::make_shared<Relay>();
  EventLoop& loop = runtime.supervisor.loop();
  Watch watch;
  watch.timeout = r.timeout;
  watch.onEnd = [ended, relay, &loop, signalFd = r.signalFd](const Ending& e) {
    relay->ended = true;
    if (relay->signalWatched) loop.unwatch(signalFd);
    if (relay->stdinWatched) loop.unwatch(STDIN_FILENO);
    ended->set_value(e);
  };
  if (r.pty) watch.onOutput = [](LogChannel, std::string_view bytes) { writeAll(STDOUT_FILENO, bytes); };
  const std::string id = "run-" + std::to_string(::getpid());
  auto launched = runtime.launcher.launch(LaunchRequest{.rules = r.rules,
                                                        // (only audit events carry it: a digest of every rule)
                                                        .fingerprint = runtime.audit.wanted() ? r.rules.fingerprint() : "",
                                                        .program = std::move(r.program),
                                                        .output = r.pty ? Output::kPty : Output::kInherit,
                                                        .stdin = StdinMode::kOpen,
                                                        .onMissingLayer = r.onMissingLayer,
                                                        .terminalSize = r.pty.value_or(platform::WindowSize{}),
                                                        .sandboxId = r.sandboxId,
                                                        .id = id,
                                                        .idField = "runId",
                                                        .network = std::move(network),
                                                        .resolve = std::move(resolve),
                                                        .workspace = std::move(r.workspace)},
                                          std::move(watch));
  if (auto* err = std::get_if<platform::SpawnError>(&launched)) return std::move(*err);
  auto& child = std::get<Launched>(launched);
  started(ForegroundStarted{child.enforcement});
  std::weak_ptr<Supervised> weak = child.supervised;

  // -t: the caller's terminal in raw mode, its keys relayed to the PTY.
  if (r.pty) {
    if (platform::isTerminal(STDIN_FILENO) && !terminals.empty())
      (void)terminals.front().makeRaw();  // fd 0's terminal: saved first
    struct stat st;
    const bool pollable = ::fstat(STDIN_FILENO, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
    if (pollable) {
      loop.post([&loop, weak, relay] {
        if (relay->ended) return;
        relay->stdinWatched = true;
        loop.watch(STDIN_FILENO, EPOLLIN, [&loop, weak, relay](std::uint32_t) {
          char buf[4096];
          ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
          auto s = weak.lock();
          if (n > 0) {
            if (s) s->writeStdin(std::string(buf, static_cast<std::size_t>(n)), false);
            return;
          }
          loop.unwatch(STDIN_FILENO);
          relay->stdinWatched = false;
          if (s) s->writeStdin("\x04", false);  // end of input: the terminal's EOF character
        });
      });
    } else if (st.st_size >= 0) {  // a regular file: its contents, then EOF
      std::string contents;
      char buf[65536];
      for (ssize_t n; (n = ::read(STDIN_FILENO, buf, sizeof buf)) > 0;) contents.append(buf, static_cast<std::size_t>(n));
      child.supervised->writeStdin(contents + "\x04", false);
    }
  }

  // A signal the caller forwards ends the sandbox; SIGWINCH resizes its PTY.
  auto master = std::make_shared<platform::UniqueFd>(std::move(child.terminal));
  // Posted, not waited for: a watch the end came before is not made.
  if (r.signalFd >= 0)
    loop.post([&loop, fd = r.signalFd, relay, weak, master] {
      if (relay->ended) return;
      relay->signalWatched = true;
      loop.watch(fd, EPOLLIN, [fd, relay, weak, master](std::uint32_t) {
        signalfd_siginfo info;
        if (::read(fd, &info, sizeof info) != sizeof info) return;
        if (info.ssi_signo == SIGWINCH) {
          if (!*master) return;
          auto size = platform::windowSize(STDIN_FILENO);
          if (!size) size = platform::windowSize(STDOUT_FILENO);
          if (size) (void)platform::setWindowSize(master->get(), *size);
          return;
        }
        if (!relay->received) relay->received = static_cast<int>(info.ssi_signo);
        if (auto s = weak.lock()) s->kill(SIGKILL);
      });
    });
  // The end set `received` (on the loop thread) before the outcome.
  if (loop.drivenByCaller()) loop.runUntil([&relay] { return relay->ended; });
  Ending ending = ended->get_future().get();
  return ForegroundOutcome{std::move(ending), relay->received};
}

}  // namespace stockade::process
