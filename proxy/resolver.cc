#include "proxy/resolver.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <thread>

namespace stockade::proxy {

LookupResult Resolver::systemLookup(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) return std::string(rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc));
  std::vector<std::string> addresses;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* address = nullptr;
    if (a->ai_family == AF_INET) address = &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
    if (a->ai_family == AF_INET6) address = &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
    if (address && ::inet_ntop(a->ai_family, address, text, sizeof text)) addresses.emplace_back(text);
  }
  ::freeaddrinfo(list);
  return addresses;
}

Resolver::Resolver(std::size_t threads, Lookup lookup) : shared_(std::make_shared<Shared>()) {
  shared_->lookup = std::move(lookup);
  shared_->maxThreads = std::max<std::size_t>(threads, 1);
}

Resolver::~Resolver() {
  std::vector<std::shared_ptr<Job>> dropped;  // their callbacks are destroyed outside the lock
  std::unique_lock lock(shared_->mu);
  shared_->stopped = true;
  for (auto& [id, job] : shared_->jobs) dropped.push_back(std::move(job));
  shared_->jobs.clear();
  shared_->keys.clear();
  shared_->ready.clear();
  shared_->wake.notify_all();
  // A callback being made right now may use what its caller owns: wait for it.
  shared_->calledBack.wait(lock, [&] { return shared_->calling == 0; });
  lock.unlock();
  for (auto& job : dropped) job->done = nullptr;
}

std::uint64_t Resolver::resolve(const std::string& key, std::string host, std::uint16_t port,
                                std::function<void(LookupResult)> done) {
  auto job = std::make_shared<Job>();
  job->key = key;
  job->host = std::move(host);
  job->port = port;
  job->done = std::move(done);
  Shared& s = *shared_;
  std::unique_lock lock(s.mu);
  job->id = s.nextId++;
  s.jobs.emplace(job->id, job);
  KeyState& k = s.keys[key];
  if (!k.running && k.queue.empty()) s.ready.push_back(key);
  k.queue.push_back(job);
  const bool start = s.idle == 0 && s.threads < s.maxThreads;
  if (start) ++s.threads;
  lock.unlock();
  if (!start) {
    s.wake.notify_one();
  } else {
    try {
      std::thread(work, shared_).detach();
    } catch (const std::exception&) {  // no thread now: the lookup waits for a running one, or its deadline
      lock.lock();
      --s.threads;
    }
  }
  return job->id;
}

void Resolver::cancel(std::uint64_t id) {
  std::shared_ptr<Job> job;
  {
    std::lock_guard lock(shared_->mu);
    auto j = shared_->jobs.find(id);
    if (j == shared_->jobs.end()) return;
    job = std::move(j->second);
    shared_->jobs.erase(j);
    auto k = shared_->keys.find(job->key);
    if (k != shared_->keys.end()) {
      auto& queue = k->second.queue;
      queue.erase(std::remove(queue.begin(), queue.end(), job), queue.end());
      if (!k->second.running && queue.empty()) shared_->keys.erase(k);
    }
  }
  job->done = nullptr;  // outside the lock: the callback may own things that call back in
}

void Resolver::work(std::shared_ptr<Shared> shared) {
  Shared& s = *shared;
  std::unique_lock lock(s.mu);
  for (;;) {
    ++s.idle;
    s.wake.wait(lock, [&] { return s.stopped || !s.ready.empty(); });
    --s.idle;
    if (s.stopped) break;
    const std::string key = std::move(s.ready.front());
    s.ready.pop_front();
    auto k = s.keys.find(key);
    // A key is in `ready` once per turn; a stale entry (its lookups were
    // cancelled, or it is running already) is skipped.
    if (k == s.keys.end() || k->second.running || k->second.queue.empty()) continue;
    std::shared_ptr<Job> job = std::move(k->second.queue.front());
    k->second.queue.pop_front();
    k->second.running = true;
    lock.unlock();
    LookupResult result;
    try {
      result = s.lookup(job->host, job->port);
    } catch (const std::exception& e) {
      result = std::string("lookup failed: ") + e.what();
    }
    lock.lock();
    if (s.stopped) break;
    k = s.keys.find(key);
    if (k != s.keys.end()) {
      k->second.running = false;
      if (!k->second.queue.empty()) s.ready.push_back(key);  // its next turn, behind the keys waiting now
      else s.keys.erase(k);
    }
    std::function<void(LookupResult)> done;
    if (s.jobs.erase(job->id) != 0) done = std::move(job->done);
    if (!done) continue;
    ++s.calling;
    lock.unlock();
    done(std::move(result));
    done = nullptr;
    lock.lock();
    if (--s.calling == 0) s.calledBack.notify_all();
  }
  --s.threads;
}

}  // namespace stockade::proxy
