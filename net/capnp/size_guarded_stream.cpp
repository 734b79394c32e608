#include "net/capnp/size_guarded_stream.hpp"

#include "core/log.hpp"

#include <kj/debug.h>

#include <cstring>

namespace warren::net {

size_guarded_stream::size_guarded_stream(kj::Own<kj::AsyncIoStream> inner, uint64_t limit_bytes,
                                         std::shared_ptr<bool> relaxed, std::string peer)
    : inner_(kj::mv(inner)),
      limit_bytes_(limit_bytes),
      relaxed_(std::move(relaxed)),
      peer_(std::move(peer)) {}

kj::Promise<size_t> size_guarded_stream::tryRead(void* buffer, size_t minBytes, size_t maxBytes) {
  return inner_->tryRead(buffer, minBytes, maxBytes).then([this, buffer](size_t n) {
    if (!*relaxed_) observe(static_cast<const kj::byte*>(buffer), n);
    return n;
  });
}

void size_guarded_stream::observe(const kj::byte* bytes, size_t n) {
  while (n > 0) {
    if (body_remaining_ > 0) {
      auto skip = static_cast<size_t>(std::min<uint64_t>(body_remaining_, n));
      body_remaining_ -= skip;
      bytes += skip;
      n -= skip;
      continue;
    }
    // In the segment table: a u32 segment count - 1, a u32 size per segment, padded to words.
    size_t want = header_size_ == 0 ? 4 : header_size_;
    size_t take = std::min(n, want - header_.size());
    header_.append(reinterpret_cast<const char*>(bytes), take);
    bytes += take;
    n -= take;
    if (header_.size() < want) continue;
    if (header_size_ == 0) {
      uint32_t count_less_one = 0;
      std::memcpy(&count_less_one, header_.data(), 4);
      uint64_t segments = uint64_t{count_less_one} + 1;
      if (segments > 512) throw KJ_EXCEPTION(FAILED, "too many segments before login");
      header_size_ = static_cast<size_t>((4 * (segments + 1) + 7) / 8 * 8);
      continue;
    }
    header_complete();
  }
}

void size_guarded_stream::header_complete() {
  uint64_t words = 0;
  for (size_t at = 4; at + 4 <= header_.size(); at += 4) {
    uint32_t size = 0;
    std::memcpy(&size, header_.data() + at, 4);
    words += size;
  }
  header_.clear();
  header_size_ = 0;
  if (words * 8 > limit_bytes_) {
    log(log_level::info, "rpc",
        "dropping " + peer_ + ": a message of " + std::to_string(words * 8) +
            " bytes before logging in (the limit before login is " + std::to_string(limit_bytes_) +
            ")");
    throw KJ_EXCEPTION(FAILED, "message too large before login");
  }
  body_remaining_ = words * 8;
}

kj::Promise<void> size_guarded_stream::write(const void* buffer, size_t size) {
  return inner_->write(buffer, size);
}
kj::Promise<void> size_guarded_stream::write(
    kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) {
  return inner_->write(pieces);
}
kj::Promise<void> size_guarded_stream::whenWriteDisconnected() {
  return inner_->whenWriteDisconnected();
}
void size_guarded_stream::shutdownWrite() {
  inner_->shutdownWrite();
}
void size_guarded_stream::abortRead() {
  inner_->abortRead();
}
void size_guarded_stream::getsockopt(int level, int option, void* value, kj::uint* length) {
  inner_->getsockopt(level, option, value, length);
}
void size_guarded_stream::setsockopt(int level, int option, const void* value, kj::uint length) {
  inner_->setsockopt(level, option, value, length);
}
void size_guarded_stream::getsockname(struct sockaddr* addr, kj::uint* length) {
  inner_->getsockname(addr, length);
}
void size_guarded_stream::getpeername(struct sockaddr* addr, kj::uint* length) {
  inner_->getpeername(addr, length);
}

}  // namespace warren::net
