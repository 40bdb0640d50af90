// The state behind a Proxy: its io thread and context, the audit sink, the
// admission counters, the pipe pool, the resolver and the listeners.
// Internal to the proxy (Asio types).
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "proxy/admission.h"
#include "proxy/pipe_pool.h"
#include "proxy/resolver.h"
#include "proxy/proxy.h"

namespace stockade::proxy {

class Session;

// One listener and the connections accepted on it. io thread only.
struct ListenerState {
  std::uint64_t id = 0;
  ListenerContext context;  // resolveOverrides normalised
  boost::asio::ip::tcp::acceptor acceptor;
  std::unordered_map<std::uint64_t, std::weak_ptr<Session>> sessions;
  std::uint64_t nextSession = 1;
  std::size_t pending = 0;   // sessions before their first request head
  std::size_t refusing = 0;  // sessions answering an admission refusal
  bool closed = false;
  explicit ListenerState(boost::asio::io_context& ioc) : acceptor(ioc) {}
};

namespace detail {
struct ProxyState {
  explicit ProxyState(ProxyOptions o) : options(o), pipes(o.limits.splicePipeBytes) {}

  ProxyOptions options;
  SandboxCounters counters;
  PipePool pipes;  // io thread only; declared before ioc so that it outlives every session
  boost::asio::io_context ioc{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ioc.get_executor()};
  // Name lookups, fair between sandboxes (resolver.h). Declared after ioc: it
  // is destroyed first, and then posts no more answers to it.
  Resolver resolver;
  std::thread thread;
  std::atomic<bool> stopped{false};
  std::once_flag joinOnce;

  mutable std::mutex mu;  // guards sink, nextListenerId
  std::shared_ptr<const AuditSink> sink;
  std::uint64_t nextListenerId = 1;

  // io thread only
  std::unordered_map<std::uint64_t, std::shared_ptr<ListenerState>> listeners;

  // Calls the audit sink; an exception it throws is logged, never propagated.
  void emit(const ProxyEvent& event);
  // Runs fn on the io thread and waits for it (inline when already there).
  void runOnIo(const std::function<void()>& fn);
  void closeListener(std::uint64_t id);
  void shutdown();
};
}  // namespace detail
using detail::ProxyState;

}  // namespace stockade::proxy
