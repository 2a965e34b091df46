#include "engine_fds.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace lazycube::http {

namespace {
// One bit per fd below this (higher fds, rare, are not tracked: a child keeps them as before).
// A bitmap of atomics and not a locked set: the child after fork() must not take a lock some
// other thread of the parent may have held.
constexpr int kTrackedFds = 1 << 20;
std::atomic<std::uint64_t> g_owned[kTrackedFds / 64];

void mark(int fd, bool owned) {
  if (fd < 0 || fd >= kTrackedFds) return;
  const std::uint64_t bit = std::uint64_t{1} << (fd % 64);
  if (owned)
    g_owned[fd / 64].fetch_or(bit, std::memory_order_relaxed);
  else
    g_owned[fd / 64].fetch_and(~bit, std::memory_order_relaxed);
}
}  // namespace

void own_fd(int fd) { mark(fd, true); }
void disown_fd(int fd) { mark(fd, false); }

void close_owned_fds_in_child() {
  for (int w = 0; w < kTrackedFds / 64; ++w) {
    std::uint64_t bits = g_owned[w].exchange(0, std::memory_order_relaxed);
    while (bits) {
      const int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      ::close(w * 64 + b);
    }
  }
}

curl_socket_t open_owned_socket(void* open_count, curlsocktype, curl_sockaddr* address) {
  const int fd = ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
  if (fd < 0) return CURL_SOCKET_BAD;
  own_fd(fd);
  if (open_count) ++*static_cast<std::size_t*>(open_count);
  return fd;
}

int close_owned_socket(void* open_count, curl_socket_t fd) {
  disown_fd(fd);
  if (open_count) --*static_cast<std::size_t*>(open_count);
  return ::close(fd);
}

}  // namespace lazycube::http
