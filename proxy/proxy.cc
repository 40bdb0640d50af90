// The proxy's public face and its listeners: the io thread, addListener()
// and the accept loop that admits each connection against the limits and
// hands it to a Session (session.h). One io thread, one coroutine per
// connection; every session and listener is touched only on that thread, so
// no locking is needed below ProxyState (proxy_state.h).

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>; include it first.
#include <utility>

#include "proxy/proxy.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <future>
#include <stdexcept>
#include <variant>
#include <vector>

#include "policy/domain.h"
#include "proxy/admission.h"
#include "proxy/decision.h"
#include "proxy/proxy_state.h"
#include "proxy/session.h"

namespace stockade::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
template <class T>
using awaitable = asio::awaitable<T>;

std::string_view protocolName(Protocol p) noexcept {
  switch (p) {
    case Protocol::kHttp: return "http";
    case Protocol::kConnect: return "connect";
    case Protocol::kSocks5: return "socks5";
    case Protocol::kSocks4: return "socks4";
    case Protocol::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string_view eventVerdictName(EventVerdict v) noexcept {
  switch (v) {
    case EventVerdict::kAllowed: return "allowed";
    case EventVerdict::kDenied: return "denied";
    case EventVerdict::kRefused: return "refused";
  }
  return "unknown";
}

namespace {

auto tok(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// Accepts until the listener closes. Each connection is admitted against the
// limits (admission.h) before anything is read from it: served, answered
// with a refusal, or -- when too many refusals are being answered already --
// closed at once. Every refusal is audited.
awaitable<void> acceptLoop(ProxyState& proxy, std::shared_ptr<ListenerState> listener) {
  asio::steady_timer backoff(proxy.ioc);
  const ProxyLimits& limits = proxy.options.limits;
  const std::string& sandbox = listener->context.sandboxId;
  while (!listener->closed) {
    error_code ec;
    tcp::socket socket = co_await listener->acceptor.async_accept(tok(ec));
    if (listener->closed) co_return;
    if (ec) {
      if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
      // EMFILE and friends: wait instead of spinning; the listener stays up.
      spdlog::warn("stockade proxy: accept on the listener of sandbox {} failed: {}", sandbox, ec.message());
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(tok(ec));
      continue;
    }
    AdmissionCounts counts{proxy.counters.count(SandboxCounters::Kind::kConnection, sandbox), listener->pending,
                           listener->refusing};
    Admission admission = admit(counts, limits);
    if (admission == Admission::kDrop) {
      ProxyEvent e;
      e.sandboxId = sandbox;
      e.runId = listener->context.runId;
      e.rule = "this listener of sandbox " + sandbox + " is already answering " +
               std::to_string(limits.maxPendingPerListener) +
               " connections refused at a limit (ProxyLimits.maxConnectionsPerSandbox, maxPendingPerListener); "
               "closed unanswered";
      proxy.emit(e);
      socket.close(ec);
      continue;
    }
    SandboxCounters::Slot slot;
    if (admission == Admission::kServe) slot = proxy.counters.connection(sandbox);
    std::uint64_t id = listener->nextSession++;
    auto session = std::make_shared<Session>(proxy, listener, id, std::move(socket), admission, std::move(slot));
    listener->sessions.emplace(id, session);
    asio::co_spawn(proxy.ioc, Session::start(session), asio::detached);
  }
}

}  // namespace

void ProxyState::emit(const ProxyEvent& event) {
  std::shared_ptr<const AuditSink> s;
  {
    std::lock_guard lock(mu);
    s = sink;
  }
  if (!s || !*s) return;
  try {
    (*s)(event);
  } catch (const std::exception& e) {
    spdlog::error("stockade proxy: the audit sink threw: {}", e.what());
  } catch (...) {
    spdlog::error("stockade proxy: the audit sink threw a non-standard exception");
  }
}

void ProxyState::runOnIo(const std::function<void()>& fn) {
  if (ioc.get_executor().running_in_this_thread()) {
    fn();
    return;
  }
  std::promise<void> done;
  asio::post(ioc, [&] {
    fn();
    done.set_value();
  });
  done.get_future().wait();
}

void ProxyState::closeListener(std::uint64_t id) {
  auto it = listeners.find(id);
  if (it == listeners.end()) return;
  std::shared_ptr<ListenerState> l = it->second;
  listeners.erase(it);
  l->closed = true;
  error_code ec;
  l->acceptor.close(ec);
  // close() erases the session from the map: iterate over a copy.
  auto sessions = l->sessions;
  for (auto& [sid, weak] : sessions) {
    if (auto s = weak.lock()) s->close();
  }
}

void ProxyState::shutdown() {
  if (!stopped.exchange(true)) {
    asio::post(ioc, [this] {
      std::vector<std::uint64_t> ids;
      for (auto& [id, l] : listeners) ids.push_back(id);
      for (auto id : ids) closeListener(id);
    });
    work.reset();
  }
  if (ioc.get_executor().running_in_this_thread()) {
    throw std::logic_error("stockade::proxy::Proxy::shutdown() called from the proxy's own thread");
  }
  std::call_once(joinOnce, [this] {
    if (thread.joinable()) thread.join();
  });
}

// ---- public API ---------------------------------------------------------------

Proxy::Proxy(ProxyOptions options) : impl_(std::make_shared<ProxyState>(options)) {
  if (options.limits.maxHeaderBytes < 1024)
    throw std::invalid_argument("ProxyLimits.maxHeaderBytes must be at least 1024");
  if (options.limits.maxConnectionsPerSandbox == 0)
    throw std::invalid_argument("ProxyLimits.maxConnectionsPerSandbox must be at least 1");
  if (options.limits.maxPendingPerListener == 0)
    throw std::invalid_argument("ProxyLimits.maxPendingPerListener must be at least 1");
  impl_->thread = std::thread([impl = impl_.get()] { impl->ioc.run(); });
}

Proxy::~Proxy() {
  if (impl_) impl_->shutdown();
}

void Proxy::shutdown() { impl_->shutdown(); }

void Proxy::setAuditSink(AuditSink sink) {
  auto s = std::make_shared<const AuditSink>(std::move(sink));
  std::lock_guard lock(impl_->mu);
  impl_->sink = std::move(s);
}

std::size_t Proxy::activeTunnels(const std::string& sandboxId) const {
  return impl_->counters.count(SandboxCounters::Kind::kTunnel, sandboxId);
}

std::size_t Proxy::activeConnections(const std::string& sandboxId) const {
  return impl_->counters.count(SandboxCounters::Kind::kConnection, sandboxId);
}

ListenerHandle Proxy::addListener(platform::UniqueFd listeningSocket, ListenerContext context) {
  if (impl_->stopped) throw std::logic_error("stockade::proxy::Proxy::addListener after shutdown()");
  if (!context.rules) throw std::invalid_argument("ListenerContext.rules: a rules provider is required");
  int fd = listeningSocket.get();
  int accepting = 0, type = 0;
  socklen_t len = sizeof accepting;
  if (fd < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting)
    throw std::invalid_argument("addListener: fd " + std::to_string(fd) + " is not a listening socket");
  len = sizeof type;
  sockaddr_storage addr{};
  socklen_t addrLen = sizeof addr;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addrLen) != 0 ||
      (addr.ss_family != AF_INET && addr.ss_family != AF_INET6))
    throw std::invalid_argument("addListener: fd " + std::to_string(fd) + " is not a TCP socket");

  std::map<std::string, std::string> overrides;
  for (const auto& [name, address] : context.resolveOverrides) {
    auto h = normaliseHost(name);
    if (auto* why = std::get_if<std::string>(&h))
      throw std::invalid_argument("resolve override \"" + name + "\": " + *why);
    if (std::get<Host>(h).isAddress)
      throw std::invalid_argument("resolve override \"" + name + "\": the key must be a host name, not an address");
    auto ip = policy::canonicalIp(address);
    if (!ip) throw std::invalid_argument("resolve override \"" + name + "\" -> \"" + address + "\": not an IP address");
    overrides[std::get<Host>(h).text] = *ip;
  }
  context.resolveOverrides = std::move(overrides);

  auto state = std::make_shared<ListenerState>(impl_->ioc);
  {
    std::lock_guard lock(impl_->mu);
    state->id = impl_->nextListenerId++;
  }
  state->context = std::move(context);
  error_code ec;
  state->acceptor.assign(addr.ss_family == AF_INET ? tcp::v4() : tcp::v6(), fd, ec);
  if (ec) throw std::invalid_argument("addListener: cannot use fd " + std::to_string(fd) + ": " + ec.message());
  listeningSocket.release();  // owned by the acceptor now
  impl_->runOnIo([&] {
    impl_->listeners.emplace(state->id, state);
    asio::co_spawn(impl_->ioc, acceptLoop(*impl_, state), asio::detached);
  });
  return ListenerHandle(std::weak_ptr<void>(impl_), state->id);
}

ListenerHandle::ListenerHandle(ListenerHandle&& other) noexcept
    : proxy_(std::move(other.proxy_)), id_(std::exchange(other.id_, 0)) {}

ListenerHandle& ListenerHandle::operator=(ListenerHandle&& other) noexcept {
  if (this != &other) {
    close();
    proxy_ = std::move(other.proxy_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

ListenerHandle::~ListenerHandle() { close(); }

void ListenerHandle::close() {
  std::uint64_t id = std::exchange(id_, 0);
  if (id == 0) return;
  auto locked = proxy_.lock();
  proxy_.reset();
  if (!locked) return;
  auto impl = std::static_pointer_cast<ProxyState>(locked);
  if (impl->stopped) return;  // shutdown closes everything
  impl->runOnIo([&] { impl->closeListener(id); });
}

}  // namespace stockade::proxy
