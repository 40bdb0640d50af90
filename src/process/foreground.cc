#include "src/process/foreground.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <future>

#include "policy/domain.h"
#include "src/audit/event.h"

namespace stockade::process {

std::optional<std::string> resolveProblem(const std::string& name, const std::string& address) {
  if (!policy::normaliseHostName(name) || policy::canonicalIp(name))
    return audit::printable(name) + " is not a host name";
  std::string bare = address.size() > 2 && address.front() == '[' && address.back() == ']'
                         ? address.substr(1, address.size() - 2)
                         : address;
  if (!policy::canonicalIp(bare)) return audit::printable(address) + " is not an IPv4 or IPv6 address";
  return std::nullopt;
}

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

  auto ended = std::make_shared<std::promise<Ending>>();
  Watch watch;
  watch.timeout = r.timeout;
  watch.onEnd = [ended](const Ending& e) { ended->set_value(e); };
  const std::string id = "run-" + std::to_string(::getpid());
  auto launched = runtime.launcher.launch(LaunchRequest{.rules = r.rules,
                                                        .fingerprint = r.rules.fingerprint(),
                                                        .program = std::move(r.program),
                                                        .output = Output::kInherit,
                                                        .onMissingLayer = platform::OnMissingLayer::kRunAndReport,
                                                        .sandboxId = r.sandboxId,
                                                        .id = id,
                                                        .idField = "runId",
                                                        .network = std::move(network),
                                                        .resolve = std::move(resolve)},
                                          std::move(watch));
  if (auto* err = std::get_if<platform::SpawnError>(&launched)) return std::move(*err);
  auto& child = std::get<Launched>(launched);
  started(ForegroundStarted{child.enforcement});

  // A signal the caller forwards ends the sandbox: read on the loop, like
  // every other fd of the child.
  auto received = std::make_shared<std::optional<int>>();
  EventLoop& loop = runtime.supervisor.loop();
  if (r.signalFd >= 0)
    loop.call([&] {
      loop.watch(r.signalFd, EPOLLIN, [fd = r.signalFd, received, weak = std::weak_ptr(child.supervised)](std::uint32_t) {
        signalfd_siginfo info;
        if (::read(fd, &info, sizeof info) != sizeof info) return;
        if (!*received) *received = static_cast<int>(info.ssi_signo);
        if (auto s = weak.lock()) s->kill(SIGKILL);
      });
    });
  ForegroundOutcome outcome{ended->get_future().get(), std::nullopt};
  if (r.signalFd >= 0)
    loop.call([&] {
      loop.unwatch(r.signalFd);
      outcome.signal = *received;
    });
  return outcome;
}

}  // namespace stockade::process
