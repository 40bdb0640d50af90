// Name lookups for the proxy, fair between sandboxes. getaddrinfo() blocks,
// and Asio runs every async_resolve() of an io_context on one thread of its
// own, in order: a sandbox asking for names that resolve slowly (random
// labels under an allowed wildcard) held every other sandbox's lookups behind
// all of its own -- eight one-second names made another sandbox's name take
// 7.8 s, ten would have run it past connectTimeout.
//
// Here each key (the proxy uses the sandbox id) has at most one lookup
// running at a time, counted until getaddrinfo() returns even when its caller
// gave up (so lookups abandoned at a deadline cannot pile up on the threads);
// the key's next lookups wait in its own queue, and a few threads take the
// keys in turn. A lookup then waits behind at most one running lookup of each
// other key, never behind another key's queue.
//
// Thread-safe. Independent of Asio: the caller gets its answer through a
// callback (the proxy posts it to its io thread).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace stockade::proxy {

// A lookup's answer: the addresses in the order given (IP literals), or why
// there are none.
using LookupResult = std::variant<std::vector<std::string>, std::string>;

class Resolver {
 public:
  // Blocking: the addresses of host (a name) for a TCP connection to port.
  using Lookup = std::function<LookupResult(const std::string& host, std::uint16_t port)>;
  // getaddrinfo(AF_UNSPEC, SOCK_STREAM, AI_NUMERICSERV).
  static LookupResult systemLookup(const std::string& host, std::uint16_t port);

  // At most `threads` lookups run at once (threads start when needed).
  explicit Resolver(std::size_t threads = 4, Lookup lookup = systemLookup);
  // Drops the queued lookups without calling them back; running ones finish
  // on their threads, which exit without calling back either.
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Queues a lookup of `host` for `key`. `done` is called once, on one of the
  // resolver's threads, unless the lookup is cancelled first (or the resolver
  // destroyed). Returns the lookup's id, for cancel().
  std::uint64_t resolve(const std::string& key, std::string host, std::uint16_t port,
                        std::function<void(LookupResult)> done);
  // After this, `done` of lookup `id` is not called (a no-op once it was).
  // A running lookup still counts for its key until it returns.
  void cancel(std::uint64_t id);

 private:
  struct Job {
    std::uint64_t id = 0;
    std::string key, host;
    std::uint16_t port = 0;
    std::function<void(LookupResult)> done;  // empty once cancelled
  };
  struct KeyState {
    bool running = false;
    std::deque<std::shared_ptr<Job>> queue;
  };
  struct Shared {
    std::mutex mu;
    std::condition_variable wake;        // a key is ready, or stopped
    std::condition_variable calledBack;  // `calling` went to 0
    Lookup lookup;
    std::unordered_map<std::string, KeyState> keys;
    std::deque<std::string> ready;  // keys with a queued lookup and none running, in turn
    std::unordered_map<std::uint64_t, std::shared_ptr<Job>> jobs;  // not yet called back
    std::size_t threads = 0, idle = 0, maxThreads = 0;
    std::size_t calling = 0;  // callbacks being made
    std::uint64_t nextId = 1;
    bool stopped = false;
  };
  static void work(std::shared_ptr<Shared> shared);
  std::shared_ptr<Shared> shared_;
};

}  // namespace stockade::proxy
