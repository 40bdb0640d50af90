#include "src/process/log_ring.h"

#include <cstdio>

namespace stockade::process {

LogRing::LogRing(std::size_t capacityBytes, std::shared_ptr<Budget> budget)
    : capacity_(capacityBytes), budget_(std::move(budget)) {}

LogRing::~LogRing() { clear(); }

void LogRing::append(LogChannel channel, std::string_view bytes, std::chrono::system_clock::time_point time) {
  if (bytes.empty()) return;
  frames_.push_back(Frame{next_++, channel, std::string(bytes), time});
  held_ += bytes.size();
  if (budget_) budget_->usedBytes += bytes.size();
  while (frames_.size() > 1 &&
         (held_ > capacity_ || (budget_ && budget_->usedBytes.load() > budget_->capBytes)))
    dropOldest();
}

void LogRing::dropOldest() {
  const std::size_t size = frames_.front().bytes.size();
  frames_.pop_front();
  held_ -= size;
  if (budget_) budget_->usedBytes -= size;
  droppedBytes_ += size;
  ++droppedFrames_;
}

void LogRing::clear() {
  while (!frames_.empty()) dropOldest();
}

LogRing::Page LogRing::read(std::uint64_t after, std::size_t limit) const {
  Page page;
  page.firstAvailable = firstAvailable();
  // Something after the cursor is gone: frames numbered (after, firstAvailable) were dropped.
  const std::uint64_t oldest = frames_.empty() ? next_ : frames_.front().sequence;
  page.truncatedHead = droppedFrames_ != 0 && after + 1 < oldest;
  if (frames_.empty() || after >= frames_.back().sequence) return page;
  std::size_t start = after < oldest ? 0 : static_cast<std::size_t>(after + 1 - oldest);
  for (std::size_t i = start; i < frames_.size() && page.frames.size() < limit; ++i) page.frames.push_back(frames_[i]);
  page.hasMore = start + page.frames.size() < frames_.size();
  return page;
}

std::string LogRing::cursorText(std::uint64_t sequence) {
  char text[24];
  std::snprintf(text, sizeof text, "c%016llx", static_cast<unsigned long long>(sequence));
  return text;
}

std::optional<std::uint64_t> LogRing::parseCursor(std::string_view cursor) {
  if (cursor.size() != 17 || cursor[0] != 'c') return std::nullopt;
  std::uint64_t value = 0;
  for (char c : cursor.substr(1)) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    value = value << 4 | static_cast<std::uint64_t>(digit);
  }
  return value;
}

bool isUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int length = 0;
    std::uint32_t cp = 0, min = 0;
    if ((c & 0xe0) == 0xc0) length = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) length = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) length = 4, cp = c & 0x07, min = 0x10000;
    else return false;
    if (i + static_cast<std::size_t>(length) > s.size()) return false;
    for (int k = 1; k < length; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = cp << 6 | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += static_cast<std::size_t>(length);
  }
  return true;
}

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16 | static_cast<unsigned char>(bytes[i + 1]) << 8 |
                      static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < bytes.size()) {
    std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace stockade::process
