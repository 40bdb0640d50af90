// The proxy's resolver with a lookup of the test's own (no DNS): each key has
// one lookup running at a time, keys take turns, a cancelled lookup is never
// answered, and a destroyed resolver answers nothing.
#include "proxy/resolver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace stockade::proxy {
namespace {

using namespace std::chrono_literals;

// A lookup that blocks each host until the test opens it, recording what
// runs. Shared with the lookups, which may still be returning on a resolver
// thread once the test is done with it.
class Gate : public std::enable_shared_from_this<Gate> {
 public:
  Resolver::Lookup lookup() {
    return [self = shared_from_this()](const std::string& host, std::uint16_t) -> LookupResult {
      std::unique_lock lock(self->mu_);
      self->running_.insert(host);
      ++self->started_[host];
      self->cv_.notify_all();
      self->cv_.wait(lock, [&] { return self->open_.count(host) || self->openAll_; });
      self->running_.erase(host);
      ++self->returned_;
      self->cv_.notify_all();
      return std::vector<std::string>{"127.0.0.1"};
    };
  }
  bool waitReturned(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return returned_ >= n; });
  }
  void open(const std::string& host) {
    std::lock_guard lock(mu_);
    open_.insert(host);
    cv_.notify_all();
  }
  void openAll() {
    std::lock_guard lock(mu_);
    openAll_ = true;
    cv_.notify_all();
  }
  bool waitStarted(const std::string& host) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return started_[host] > 0; });
  }
  std::set<std::string> running() {
    std::lock_guard lock(mu_);
    return running_;
  }
  int started(const std::string& host) {
    std::lock_guard lock(mu_);
    return started_[host];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> open_, running_;
  std::map<std::string, int> started_;
  int returned_ = 0;
  bool openAll_ = false;
};

// The answers, by host.
class Answers {
 public:
  std::function<void(LookupResult)> to(const std::string& host) {
    return [this, host](LookupResult r) {
      std::lock_guard lock(mu_);
      got_[host] = std::holds_alternative<std::vector<std::string>>(r);
      cv_.notify_all();
    };
  }
  bool wait(const std::string& host) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return got_.count(host) > 0; });
  }
  bool has(const std::string& host) {
    std::lock_guard lock(mu_);
    return got_.count(host) > 0;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, bool> got_;
};

TEST(ResolverTest, AKeysHeldLookupsDoNotHoldAnotherKeysLookup) {
  auto gate = std::make_shared<Gate>();
  Answers answers;
  {
    Resolver resolver(2, gate->lookup());
    for (int i = 0; i < 5; ++i) resolver.resolve("sb-1", "slow" + std::to_string(i), 80, answers.to("slow" + std::to_string(i)));
    ASSERT_TRUE(gate->waitStarted("slow0"));
    resolver.resolve("sb-2", "fast", 80, answers.to("fast"));
    gate->open("fast");
    EXPECT_TRUE(answers.wait("fast")) << "sb-2 waited behind sb-1's held lookups";
    // sb-1 runs one lookup at a time, in order, though a thread is free.
    EXPECT_EQ(gate->running(), std::set<std::string>{"slow0"});
    EXPECT_EQ(gate->started("slow1"), 0);
    gate->open("slow0");
    EXPECT_TRUE(answers.wait("slow0"));
    ASSERT_TRUE(gate->waitStarted("slow1"));
    gate->openAll();
    for (int i = 1; i < 5; ++i) EXPECT_TRUE(answers.wait("slow" + std::to_string(i))) << i;
  }
}

TEST(ResolverTest, ACancelledLookupIsNeverAnsweredAndItsKeyMovesOnOnlyWhenTheRunningOneReturns) {
  auto gate = std::make_shared<Gate>();
  Answers answers;
  Resolver resolver(4, gate->lookup());
  auto running = resolver.resolve("sb-1", "a", 80, answers.to("a"));
  auto queued = resolver.resolve("sb-1", "b", 80, answers.to("b"));
  resolver.resolve("sb-1", "c", 80, answers.to("c"));
  ASSERT_TRUE(gate->waitStarted("a"));
  resolver.cancel(queued);
  resolver.cancel(running);
  // Abandoned, but still running: sb-1's next lookup waits for it to return.
  EXPECT_EQ(gate->started("c"), 0);
  gate->openAll();
  EXPECT_TRUE(answers.wait("c"));
  EXPECT_FALSE(answers.has("a"));
  EXPECT_FALSE(answers.has("b"));
  EXPECT_EQ(gate->started("b"), 0);
  resolver.cancel(running);  // a no-op once done
}

TEST(ResolverTest, ADestroyedResolverAnswersNothingQueuedOrRunning) {
  auto gate = std::make_shared<Gate>();
  Answers answers;
  {
    Resolver resolver(1, gate->lookup());
    resolver.resolve("sb-1", "a", 80, answers.to("a"));
    resolver.resolve("sb-2", "b", 80, answers.to("b"));
    ASSERT_TRUE(gate->waitStarted("a"));
  }
  gate->openAll();  // the running lookup returns after its resolver is gone
  ASSERT_TRUE(gate->waitReturned(1));
  EXPECT_FALSE(answers.has("a"));
  EXPECT_FALSE(answers.has("b"));
}

TEST(ResolverTest, TheSystemLookupAnswersANumericHostAndNamesAFailure) {
  auto numeric = Resolver::systemLookup("127.0.0.1", 80);
  ASSERT_TRUE(std::holds_alternative<std::vector<std::string>>(numeric));
  EXPECT_EQ(std::get<std::vector<std::string>>(numeric).front(), "127.0.0.1");
  auto bad = Resolver::systemLookup("", 80);  // no name at all: refused without asking DNS
  EXPECT_TRUE(std::holds_alternative<std::string>(bad));
}

}  // namespace
}  // namespace stockade::proxy
