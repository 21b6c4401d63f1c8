// comm/reach.h: where rank 0's store is, seen from this machine, before c10d connects to it.
// Owns: local_address_towards (the address this machine uses towards a host) and
// await_listener (wait until a host:port accepts TCP connections).
#pragma once
#include <string>

namespace slm::comm {

// The local address this machine uses to reach `host` (a route lookup: a UDP socket is connected,
// nothing is sent); "" when it cannot be found. Hostname-based defaults fail where the hostname
// resolves to loopback, e.g. inside network namespaces.
std::string local_address_towards(const std::string& host);

// Waits until something accepts a TCP connection at host:port, trying every 20 ms, for at most
// `limit_s` seconds; false if nothing did. c10d's TCPStore client, started before the server
// listens, sleeps a whole second before it retries: ranks that start together with rank 0 would
// lose that second on every start.
bool await_listener(const std::string& host, int port, double limit_s);

}  // namespace slm::comm
