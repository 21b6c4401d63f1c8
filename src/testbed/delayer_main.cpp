// testbed/delayer_main.cpp: `slm-delayer`, the testbed's user-space link emulator for kernels
// without sch_netem. It runs in the router namespace; iptables-legacy sends each site pair's
// forwarded packets to an NFQUEUE (one queue per direction), and for each queue the delayer holds
// every packet until its link would deliver it: the link transmits one packet at a time at
// RATE (serialisation, FIFO) and each packet arrives DELAY later; then it is accepted.
// Faults: a packet is dropped with probability LOSS_PCT/100 (seeded per queue: runs repeat) and
// while the link is down (from DOWN_AT_S for DOWN_FOR_S seconds after the delayer started); its
// delay varies uniformly by +-JITTER_MS, never overtaking the packet before it.
// Usage: slm-delayer --link QUEUE:DELAY_MS:RATE_MBIT[:LOSS_PCT:JITTER_MS:DOWN_AT_S:DOWN_FOR_S] [--link ...]
// (RATE 0 = unlimited)
// Prints each link's byte count once a second ("at <unix time> link <q> bytes <n>") and, on
// SIGTERM/SIGINT, the totals. Needs CAP_NET_ADMIN (root).
// Links libnetfilter_queue only.
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <queue>
#include <random>
#include <string>
#include <vector>

namespace {

struct Link {
  int queue = 0;
  double delay_s = 0, bytes_per_s = 0;  // 0 = unlimited
  double loss = 0, jitter_s = 0;        // probability, seconds
  double down_from = 0, down_until = 0; // monotonic seconds; equal = never down
  double free_at = 0;                   // when the link finishes sending what it holds
  double last_release = 0;              // packets leave in order
  std::mt19937_64 rng;
  nfq_q_handle* qh = nullptr;
  double bytes = 0, packets = 0;        // carried so far
  double dropped = 0;                   // packets lost (loss or outage)
};

struct Held {
  double release;
  uint32_t id;
  Link* link;
  bool operator<(const Held& o) const { return release > o.release; }  // min-heap
};

std::priority_queue<Held> held;
volatile sig_atomic_t stop = 0;

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

int on_packet(nfq_q_handle*, nfgenmsg*, nfq_data* nfa, void* data) {
  Link* l = static_cast<Link*>(data);
  const nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa);
  if (!ph) return 0;
  const uint32_t id = ntohl(ph->packet_id);
  unsigned char* payload = nullptr;
  const int got = nfq_get_payload(nfa, &payload);
  double bytes = 1500;
  if (got >= 4) bytes = (payload[2] << 8) | payload[3];  // IPv4 total length (whole GSO packet)
  double t = now_s();
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if ((t >= l->down_from && t < l->down_until) || (l->loss > 0 && u(l->rng) < l->loss)) {
    l->dropped += 1;
    nfq_set_verdict(l->qh, id, NF_DROP, 0, nullptr);
    return 0;
  }
  l->bytes += bytes, l->packets += 1;
  if (l->bytes_per_s > 0) {
    l->free_at = std::max(l->free_at, t) + bytes / l->bytes_per_s;
    t = l->free_at;
  }
  const double jitter = l->jitter_s > 0 ? (2 * u(l->rng) - 1) * l->jitter_s : 0;
  l->last_release = std::max(l->last_release, t + std::max(0.0, l->delay_s + jitter));
  held.push({l->last_release, id, l});
  return 0;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "slm-delayer: %s (%s)\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

// The --link arguments; false (after the usage line) where one is malformed. Outages count from
// `start`.
bool parse_links(int argc, char** argv, double start, std::vector<Link>& links) {
  for (int i = 1; i < argc; ++i) {
    Link l;
    double ms = 0, mbit = 0, loss = 0, jitter = 0, down_at = 0, down_for = 0;
    const int n = i + 1 < argc ? std::sscanf(argv[i + 1], "%d:%lf:%lf:%lf:%lf:%lf:%lf", &l.queue, &ms, &mbit, &loss,
                                             &jitter, &down_at, &down_for)
                               : 0;
    if (std::string(argv[i]) == "--link" && (n == 3 || n == 7) && ms >= 0 && mbit >= 0 && loss >= 0 && loss <= 100 &&
        jitter >= 0 && down_at >= 0 && down_for >= 0) {
      l.delay_s = ms / 1000.0, l.bytes_per_s = mbit * 1e6 / 8.0;
      l.loss = loss / 100.0, l.jitter_s = jitter / 1000.0;
      l.down_from = start + down_at, l.down_until = start + down_at + down_for;
      l.rng.seed(static_cast<uint64_t>(l.queue) * 0x9E3779B97F4A7C15ull + 1);
      links.push_back(l);
      ++i;
    } else {
      std::fprintf(stderr, "slm-delayer: usage: slm-delayer --link "
                           "QUEUE:DELAY_MS:RATE_MBIT[:LOSS_PCT:JITTER_MS:DOWN_AT_S:DOWN_FOR_S] [--link ...]\n");
      return false;
    }
  }
  return true;
}

// Real-time priority: a delayer that waits for a busy core to release a packet adds its wait to
// the link's delay (measured: +4 ms per round trip with 4 busy ranks on 2 cores without it).
void raise_priority() {
  sched_param prio{};
  prio.sched_priority = 20;
  if (sched_setscheduler(0, SCHED_FIFO, &prio) != 0)
    std::fprintf(stderr, "slm-delayer: no real-time priority (%s); delays may run long under load\n", std::strerror(errno));
}

// One netfilter queue per link, each packet's header copied to on_packet; a large receive buffer.
nfq_handle* open_queues(std::vector<Link>& links) {
  nfq_handle* h = nfq_open();
  if (!h) die("cannot open netfilter queue (needs root / CAP_NET_ADMIN)");
  for (Link& l : links) {
    l.qh = nfq_create_queue(h, static_cast<uint16_t>(l.queue), &on_packet, &l);
    if (!l.qh) die("cannot bind queue " + std::to_string(l.queue));
    if (nfq_set_mode(l.qh, NFQNL_COPY_PACKET, 64) < 0) die("cannot set copy mode");
    nfq_set_queue_maxlen(l.qh, 1 << 16);
  }
  const int fd = nfq_fd(h);
  int big = 64 << 20, one = 1;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);
  return h;
}

// Per-link byte counters, with wall-clock time.
void report(const std::vector<Link>& links) {
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  for (const Link& l : links)
    std::fprintf(stderr, "slm-delayer: at %.3f link %d bytes %.0f\n",
                 static_cast<double>(wall.tv_sec) + 1e-9 * static_cast<double>(wall.tv_nsec), l.queue, l.bytes);
  std::fflush(stderr);
}

// Until a signal: takes the queued packets (held by on_packet), releases each when its time comes
// and reports once a second.
void serve(nfq_handle* h, const std::vector<Link>& links) {
  const int fd = nfq_fd(h);
  std::vector<char> buf(1 << 17);
  double next_report = now_s() + 1;
  while (!stop) {
    if (now_s() >= next_report) {
      report(links);
      next_report += 1;
    }
    double wait_s = 0.05;
    if (!held.empty()) wait_s = std::max(0.0, std::min(wait_s, held.top().release - now_s()));
    timespec ts{static_cast<time_t>(wait_s), static_cast<long>((wait_s - static_cast<double>(static_cast<time_t>(wait_s))) * 1e9)};
    pollfd p{fd, POLLIN, 0};
    const int r = ppoll(&p, 1, &ts, nullptr);
    if (r > 0 && (p.revents & POLLIN)) {
      for (;;) {  // drain what is queued without blocking
        const ssize_t n = recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
        if (n <= 0) break;
        nfq_handle_packet(h, buf.data(), static_cast<int>(n));
      }
    }
    const double t = now_s();
    while (!held.empty() && held.top().release <= t) {
      nfq_set_verdict(held.top().link->qh, held.top().id, NF_ACCEPT, 0, nullptr);
      held.pop();
    }
  }
}

// Lets what is held through, prints the totals and closes the queues.
void finish(nfq_handle* h, std::vector<Link>& links) {
  while (!held.empty()) {
    nfq_set_verdict(held.top().link->qh, held.top().id, NF_ACCEPT, 0, nullptr);
    held.pop();
  }
  for (Link& l : links) {
    std::fprintf(stderr, "slm-delayer: link %d carried %.0f bytes in %.0f packets, dropped %.0f\n", l.queue, l.bytes,
                 l.packets, l.dropped);
    nfq_destroy_queue(l.qh);
  }
  nfq_close(h);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Link> links;
  if (!parse_links(argc, argv, now_s(), links)) return 2;
  if (links.empty()) {
    std::fprintf(stderr, "slm-delayer: no --link given\n");
    return 2;
  }
  raise_priority();
  std::signal(SIGTERM, [](int) { stop = 1; });
  std::signal(SIGINT, [](int) { stop = 1; });
  nfq_handle* h = open_queues(links);  // the links' queues point at their elements: links stays put from here
  std::fprintf(stderr, "slm-delayer: %zu link(s) ready\n", links.size());
  serve(h, links);
  finish(h, links);
  return 0;
}
