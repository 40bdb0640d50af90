#include "src/daemon/pumps.h"

#include <thread>

namespace stockade::daemon {

struct ThreadedChunks::Shared {
  std::mutex mu;
  std::condition_variable_any drained;  // the client took what was queued
  std::deque<std::string> chunks;
  std::size_t queuedBytes = 0;
  bool done = false;
  bool failed = false;  // the producer threw
  Waker wake;
  std::stop_source stop;
};

ThreadedChunks::ThreadedChunks(Produce produce, std::size_t maxQueued) : shared_(std::make_shared<Shared>()) {
  std::thread([s = shared_, produce = std::move(produce), maxQueued] {
    auto emit = [&](std::string chunk) -> bool {
      Waker wake;
      {
        std::unique_lock lock(s->mu);
        std::stop_token st = s->stop.get_token();
        s->drained.wait(lock, st, [&] { return s->queuedBytes < maxQueued; });
        if (st.stop_requested()) return false;
        s->queuedBytes += chunk.size();
        s->chunks.push_back(std::move(chunk));
        wake = s->wake;
      }
      if (wake) wake();
      return true;
    };
    bool failed = false;
    try {
      produce(s->stop.get_token(), emit);
    } catch (...) {
      failed = true;  // what was queued is still delivered, then the stream is cut
    }
    Waker wake;
    {
      std::lock_guard lock(s->mu);
      s->done = true;
      s->failed = failed;
      wake = s->wake;
    }
    if (wake) wake();
  }).detach();
}

ThreadedChunks::~ThreadedChunks() {
  std::lock_guard lock(shared_->mu);
  shared_->stop.request_stop();
  shared_->wake = nullptr;
  shared_->drained.notify_all();
}

ChunkSource::Step ThreadedChunks::next(std::string& out, const Waker& wake) {
  std::lock_guard lock(shared_->mu);
  if (!shared_->chunks.empty()) {
    out += std::move(shared_->chunks.front());
    shared_->chunks.pop_front();
    shared_->queuedBytes -= std::min(shared_->queuedBytes, out.size());
    shared_->drained.notify_all();
    return Step::kData;
  }
  if (shared_->done) return shared_->failed ? Step::kAbort : Step::kEnd;
  shared_->wake = wake;
  return Step::kPending;
}

struct ThreadedReply::Shared {
  std::mutex mu;
  std::optional<Response> result;
  Waker wake;
  std::stop_source stop;
};

ThreadedReply::ThreadedReply(Compute compute) : shared_(std::make_shared<Shared>()) {
  std::thread([s = shared_, compute = std::move(compute)] {
    Response r;
    try {
      r = compute(s->stop.get_token());
    } catch (const std::exception& e) {
      r = Response::error({ApiCode::kInternal, e.what()});
    }
    Waker wake;
    {
      std::lock_guard lock(s->mu);
      s->result = std::move(r);
      wake = s->wake;
    }
    if (wake) wake();
  }).detach();
}

ThreadedReply::~ThreadedReply() {
  std::lock_guard lock(shared_->mu);
  shared_->stop.request_stop();
  shared_->wake = nullptr;
}

std::optional<Response> ThreadedReply::poll(const Waker& wake) {
  std::lock_guard lock(shared_->mu);
  if (shared_->result) return std::move(shared_->result);
  shared_->wake = wake;
  return std::nullopt;
}

ThreadedDuplex::ThreadedDuplex(std::function<void(std::string_view)> onInput, ThreadedChunks::Produce produce)
    : onInput_(std::move(onInput)), output_(std::move(produce)) {}

}  // namespace stockade::daemon
