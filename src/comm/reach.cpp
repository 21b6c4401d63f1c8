// comm/reach.cpp: see reach.h.
#include "comm/reach.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "util/wait_time.h"

namespace slm::comm {

std::string local_address_towards(const std::string& host) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET, hints.ai_socktype = SOCK_DGRAM;
  if (::getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || !res) return "";
  std::string out;
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    char buf[INET_ADDRSTRLEN];
    if (::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf)) out = buf;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  return out;
}

namespace {

// One connection attempt to any of the addresses, each bounded by a second (SO_SNDTIMEO bounds
// connect() on Linux), so a host that drops packets cannot hold it for minutes.
bool connects(const addrinfo* addresses) {
  for (const addrinfo* a = addresses; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    timeval one_second{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &one_second, sizeof one_second);
    const bool ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    ::close(fd);
    if (ok) return true;
  }
  return false;
}

}  // namespace

bool await_listener(const std::string& host, int port, double limit_s) {
  const auto deadline = deadline_after(limit_s);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  for (;;) {
    // Resolved again each time: a name may not resolve yet while the cluster is coming up.
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) == 0 && res) {
      const bool ok = connects(res);
      ::freeaddrinfo(res);
      if (ok) return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace slm::comm
