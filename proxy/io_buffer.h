// A byte buffer with a read and a write position, of fixed capacity, for one
// direction of a proxied connection. Internal to the proxy (Asio types).
#pragma once

#include <boost/asio/buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace stockade::proxy {

class IoBuffer {
 public:
  explicit IoBuffer(std::size_t capacity) : capacity_(capacity) {}
  std::string_view view() const noexcept { return {data_.get() + begin_, end_ - begin_}; }
  std::size_t size() const noexcept { return end_ - begin_; }
  void consume(std::size_t n) noexcept {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  // Free space at the end (at most `max` bytes), compacting first; empty when full.
  boost::asio::mutable_buffer prepare(std::size_t max = SIZE_MAX) {
    if (!data_) data_ = std::make_unique_for_overwrite<char[]>(capacity_);
    if (end_ == capacity_ && begin_ > 0) {
      std::memmove(data_.get(), data_.get() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    return boost::asio::buffer(data_.get() + end_, std::min(max, capacity_ - end_));
  }
  void commit(std::size_t n) noexcept { end_ += n; }

 private:
  std::size_t capacity_;
  // Allocated on first use and uninitialised, so the pages of an idle
  // connection's buffers are never committed.
  std::unique_ptr<char[]> data_;
  std::size_t begin_ = 0, end_ = 0;
};

}  // namespace stockade::proxy
