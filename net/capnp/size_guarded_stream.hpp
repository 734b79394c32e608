// size_guarded_stream: the Cap'n Proto door's socket, watched. Cap'n Proto's framing announces a
// message's size in its first words and the reader reserves that much before the rest arrives;
// until a client has logged in, a message announcing more than a small limit ends the
// connection instead. Bytes pass through untouched.
#pragma once

#include <kj/async-io.h>

#include <cstdint>
#include <memory>
#include <string>

namespace warren::net {

class size_guarded_stream final : public kj::AsyncIoStream {
 public:
  /// `relaxed` turns true once the client has logged in; from then on any size passes (the
  /// reader's own traversal limit still applies).
  size_guarded_stream(kj::Own<kj::AsyncIoStream> inner, uint64_t limit_bytes,
                      std::shared_ptr<bool> relaxed, std::string peer);

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override;
  kj::Promise<void> write(const void* buffer, size_t size) override;
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override;
  kj::Promise<void> whenWriteDisconnected() override;
  void shutdownWrite() override;
  void abortRead() override;
  void getsockopt(int level, int option, void* value, kj::uint* length) override;
  void setsockopt(int level, int option, const void* value, kj::uint length) override;
  void getsockname(struct sockaddr* addr, kj::uint* length) override;
  void getpeername(struct sockaddr* addr, kj::uint* length) override;

 private:
  // Follows the framing through `n` bytes just read; throws when a message is too big.
  void observe(const kj::byte* bytes, size_t n);
  void header_complete();

  kj::Own<kj::AsyncIoStream> inner_;
  uint64_t limit_bytes_;
  std::shared_ptr<bool> relaxed_;
  std::string peer_;
  std::string header_;           // the segment table read so far
  size_t header_size_ = 0;       // 0 until its first word says how long it is
  uint64_t body_remaining_ = 0;  // bytes of the current message's segments still to come
};

}  // namespace warren::net
