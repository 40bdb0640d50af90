#include "src/daemon/pumps.h"

#include <thread>
#include <vector>

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

std::optional<Response> relay(const RelayRead& read, const RelayWrite& write, std::size_t pieces,
                              std::size_t pieceBytes) {
  struct Piece {
    std::unique_ptr<char[]> data;
    std::size_t size = 0;
  };
  std::mutex mu;
  std::condition_variable changed;
  std::deque<Piece> free, full;
  bool ended = false;
  std::optional<Response> failure;
  auto fail = [&](Response r) {
    std::lock_guard lock(mu);
    if (!failure) failure = std::move(r);
    changed.notify_all();
  };
  for (std::size_t i = 0; i < pieces; ++i) free.push_back({std::make_unique_for_overwrite<char[]>(pieceBytes), 0});
  std::thread writer([&] {
    for (;;) {
      Piece p;
      {
        std::unique_lock lock(mu);
        changed.wait(lock, [&] { return !full.empty() || ended || failure; });
        if (failure || full.empty()) return;
        p = std::move(full.front());
        full.pop_front();
      }
      if (auto e = write(std::string_view(p.data.get(), p.size))) return fail(std::move(*e));
      std::lock_guard lock(mu);
      free.push_back(std::move(p));
      changed.notify_all();
    }
  });
  for (;;) {
    Piece p;
    {
      std::unique_lock lock(mu);
      changed.wait(lock, [&] { return !free.empty() || failure; });
      if (failure) break;
      p = std::move(free.front());
      free.pop_front();
    }
    auto n = read(std::span<char>(p.data.get(), pieceBytes));
    if (auto* e = std::get_if<Response>(&n)) {
      fail(std::move(*e));
      break;
    }
    p.size = std::get<std::size_t>(n);
    if (p.size == 0) break;
    std::lock_guard lock(mu);
    full.push_back(std::move(p));
    changed.notify_all();
  }
  {
    std::lock_guard lock(mu);
    ended = true;
    changed.notify_all();
  }
  writer.join();
  return failure;
}

}  // namespace stockade::daemon
