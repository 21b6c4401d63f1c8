// tests/comm/reach_test.cpp: await_listener returns as soon as a port accepts connections (also
// one that opens while it waits), and false once its time is up; local_address_towards.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "comm/reach.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A TCP socket bound to a free loopback port; listening once listen() is called.
struct Port {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int number = 0;
  Port() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    number = ntohs(a.sin_port);
  }
  void listen() { EXPECT_EQ(::listen(fd, 16), 0); }
  ~Port() { ::close(fd); }
};

TEST(AwaitListener, ReturnsAtOnceWhenThePortListens) {
  Port p;
  p.listen();
  const auto t = Clock::now();
  EXPECT_TRUE(slm::comm::await_listener("127.0.0.1", p.number, 30));
  EXPECT_LT(since(t), 10);  // not the 30 s limit
}

TEST(AwaitListener, WaitsForAPortThatOpensLater) {
  Port p;  // bound, not listening: connections are refused until listen()
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    p.listen();
  });
  const auto t = Clock::now();
  const bool ok = slm::comm::await_listener("localhost", p.number, 30);
  const double waited = since(t);
  opener.join();
  EXPECT_TRUE(ok);
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 10);
}

TEST(AwaitListener, FalseWhenNothingListensInTime) {
  Port p;  // never listens
  const auto t = Clock::now();
  EXPECT_FALSE(slm::comm::await_listener("127.0.0.1", p.number, 0.3));
  EXPECT_GE(since(t), 0.3);
  EXPECT_FALSE(slm::comm::await_listener("no-such-host.invalid", p.number, 0.1));
}

TEST(LocalAddressTowards, LoopbackAndUnknownHosts) {
  EXPECT_EQ(slm::comm::local_address_towards("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(slm::comm::local_address_towards("no-such-host.invalid"), "");
}

}  // namespace
