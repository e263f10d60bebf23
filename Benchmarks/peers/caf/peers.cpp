// Troupe's peer benchmarks for CAF (C++ Actor Framework) 0.17: the workloads of troupe-bench
// written with CAF's event-based actors. Built and run by Benchmarks/peers/run.sh.
//
//   peers version            prints `version CAF <major.minor.patch>`
//   peers <Workload> <size>  runs one workload and prints
//                            `peer CAF <Workload> <units> <seconds> <check> <expected>`
//
// One workload per process, so that MemoryPerIdleActor's resident-set growth is not hidden by
// memory an earlier workload freed. As troupe-bench does, a throughput workload first runs
// once unreported at 1/100 of its size (Fibonacci: n - 8), then once measured. Diagnostics go
// to stderr; a wrong result exits with 1.
//
// All actors are dynamically typed event-based actors (`behavior`s of message handlers) on
// CAF's work-stealing scheduler, limited to 2 worker threads. The driver is the main thread,
// through a `scoped_actor` (a blocking actor). Messages between actors are one-way `send`s
// (as Troupe's `tell`); a handler that returns a value replies to the message's sender (CAF's
// own reply mechanism, again a one-way message); only Counting's final "total?" is a `request`.

#include <malloc.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "caf/all.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(peers, first_custom_type_id)
  CAF_ADD_ATOM(peers, bench, start_atom, "start")
  CAF_ADD_ATOM(peers, bench, ball_atom, "ball")      // PingPong: ping → pong
  CAF_ADD_ATOM(peers, bench, back_atom, "back")      // PingPong: pong → ping
  CAF_ADD_ATOM(peers, bench, done_atom, "done")
  CAF_ADD_ATOM(peers, bench, increment_atom, "increment")
  CAF_ADD_ATOM(peers, bench, total_atom, "total")
  CAF_ADD_ATOM(peers, bench, next_atom, "next")
  CAF_ADD_ATOM(peers, bench, token_atom, "token")
  CAF_ADD_ATOM(peers, bench, hops_atom, "hops")
  CAF_ADD_ATOM(peers, bench, work_atom, "work")
  CAF_ADD_ATOM(peers, bench, ack_atom, "ack")
  CAF_ADD_ATOM(peers, bench, fib_atom, "fib")
  CAF_ADD_ATOM(peers, bench, answer_atom, "answer")
  CAF_ADD_ATOM(peers, bench, touch_atom, "touch")
CAF_END_TYPE_ID_BLOCK(peers)

using namespace caf;
using namespace bench;
using std::int64_t;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "peers (CAF): " << what << std::endl;
  std::exit(1);
}

/// What a throughput workload measured: units in `seconds`, and the verified value `check`
/// with what it must be (`expected`).
struct outcome {
  int64_t units;
  double seconds;
  int64_t check;
  int64_t expected;
};

/// Prints the result line; a check that differs from its expected value fails the run.
void report(const std::string& workload, const outcome& x) {
  std::printf("peer CAF %s %lld %.6f %lld %lld\n", workload.c_str(),
              static_cast<long long>(x.units), x.seconds, static_cast<long long>(x.check),
              static_cast<long long>(x.expected));
  std::fflush(stdout);
  if (x.check != x.expected)
    fail(workload + ": checked " + std::to_string(x.check) + ", expected "
         + std::to_string(x.expected));
}

/// Receives one message the handlers match, failing on a CAF error (e.g. a dead actor).
template <class... Fs>
void receive_one(scoped_actor& self, Fs... fs) {
  self->receive(fs..., [&](error& err) { fail("error: " + to_string(err)); });
}

// -- PingPong ------------------------------------------------------------------------------
// Timed: from the driver's start message to Ping's "done" after the N-th pong. Verified: Ping
// received N pongs, and Pong counted N pings.

struct pong_state {
  int64_t count = 0;
};

behavior pong_actor(stateful_actor<pong_state>* self) {
  return {
    // The returned message goes back to the sender (Ping) as an ordinary message.
    [=](ball_atom) { return make_message(back_atom_v, ++self->state.count); },
  };
}

struct ping_state {
  int64_t received = 0;
};

behavior ping_actor(stateful_actor<ping_state>* self, actor pong, int64_t round_trips,
                    actor driver) {
  return {
    [=](start_atom) { self->send(pong, ball_atom_v); },
    [=](back_atom, int64_t pong_count) {
      if (++self->state.received == round_trips)
        self->send(driver, done_atom_v, self->state.received, pong_count);
      else
        self->send(pong, ball_atom_v);
    },
  };
}

outcome ping_pong(actor_system& sys, int64_t n) {
  scoped_actor self{sys};
  auto pong = sys.spawn(pong_actor);
  auto ping = sys.spawn(ping_actor, pong, n, actor{self});
  int64_t received = 0, pong_count = 0;
  auto start = clock_type::now();
  self->send(ping, start_atom_v);
  receive_one(self, [&](done_atom, int64_t r, int64_t c) { received = r; pong_count = c; });
  double seconds = seconds_since(start);
  if (pong_count != n) fail("PingPong: Pong counted " + std::to_string(pong_count) + " pings");
  self->send_exit(ping, exit_reason::user_shutdown);
  self->send_exit(pong, exit_reason::user_shutdown);
  return {n, seconds, received, n};
}

// -- Counting ------------------------------------------------------------------------------
// Timed: from the first of N one-way increments (sent by the main thread) to the reply to the
// `request` for the total that follows them. Verified: total == N.

struct counter_state {
  int64_t count = 0;
};

behavior counter_actor(stateful_actor<counter_state>* self) {
  return {
    [=](increment_atom) { ++self->state.count; },
    [=](total_atom) { return self->state.count; },
  };
}

outcome counting(actor_system& sys, int64_t n) {
  scoped_actor self{sys};
  auto counter = sys.spawn(counter_actor);
  int64_t total = -1;
  auto start = clock_type::now();
  for (int64_t i = 0; i < n; ++i)
    self->send(counter, increment_atom_v);
  self->request(counter, infinite, total_atom_v)
    .receive([&](int64_t t) { total = t; },
             [&](error& err) { fail("Counting: " + to_string(err)); });
  double seconds = seconds_since(start);
  self->send_exit(counter, exit_reason::user_shutdown);
  return {n, seconds, total, n};
}

// -- ThreadRing ----------------------------------------------------------------------------
// 100 actors in a ring; the driver gives the token (N) to actor 0; each holder forwards it,
// decremented, to its neighbour; the holder of 0 reports. Timed: from giving the token to the
// report. Verified (after the window): the hops the actors counted add up to N, and the final
// holder is actor N mod 100.

constexpr int ring_actors = 100;

struct ring_state {
  actor next;
  int64_t hops = 0;  // tokens this actor forwarded
};

behavior ring_actor(stateful_actor<ring_state>* self, int id, actor driver) {
  return {
    [=](next_atom, actor next) { self->state.next = std::move(next); },
    [=](token_atom, int64_t token) {
      if (token == 0) {
        self->send(driver, done_atom_v, id);
      } else {
        ++self->state.hops;
        self->send(self->state.next, token_atom_v, token - 1);
      }
    },
    [=](hops_atom) { return self->state.hops; },
  };
}

outcome thread_ring(actor_system& sys, int64_t n) {
  scoped_actor self{sys};
  std::vector<actor> ring;
  for (int id = 0; id < ring_actors; ++id)
    ring.push_back(sys.spawn(ring_actor, id, actor{self}));
  for (int id = 0; id < ring_actors; ++id)
    self->send(ring[id], next_atom_v, ring[(id + 1) % ring_actors]);
  int holder = -1;
  auto start = clock_type::now();
  self->send(ring[0], token_atom_v, n);
  receive_one(self, [&](done_atom, int id) { holder = id; });
  double seconds = seconds_since(start);
  int64_t hops = 0;
  for (auto& node : ring)
    self->request(node, infinite, hops_atom_v)
      .receive([&](int64_t h) { hops += h; },
               [&](error& err) { fail("ThreadRing: " + to_string(err)); });
  if (holder != n % ring_actors)
    fail("ThreadRing: final holder " + std::to_string(holder) + ", expected "
         + std::to_string(n % ring_actors));
  // The ring's handles form a cycle: stopping each actor destroys its state and breaks it.
  for (auto& node : ring)
    self->send_exit(node, exit_reason::user_shutdown);
  return {n, seconds, hops, n};
}

// -- ForkJoinCreation ----------------------------------------------------------------------
// The main thread spawns N actors and sends each one message; each replies with a small
// result (Troupe's mix(0, i) = i + 7) and quits. Timed: from the first spawn to the N-th
// acknowledgement. Verified: N acknowledgements, and the sum of their results.

behavior fork_join_worker(event_based_actor* self) {
  return {
    [=](work_atom, int64_t value) {
      self->quit();  // terminates once this handler returns (after its reply is sent)
      return make_message(ack_atom_v, value + 7);
    },
  };
}

outcome fork_join_creation(actor_system& sys, int64_t n) {
  scoped_actor self{sys};
  int64_t acks = 0, sum = 0;
  auto start = clock_type::now();
  for (int64_t i = 0; i < n; ++i)
    self->send(sys.spawn(fork_join_worker), work_atom_v, i);
  int64_t received = 0;
  self->receive_for(received, n)(
    [&](ack_atom, int64_t result) {
      ++acks;
      sum += result;
    },
    [&](error& err) { fail("ForkJoinCreation: " + to_string(err)); });
  double seconds = seconds_since(start);
  int64_t expected_sum = n * (n - 1) / 2 + 7 * n;
  if (sum != expected_sum)
    fail("ForkJoinCreation: sum of results " + std::to_string(sum) + ", expected "
         + std::to_string(expected_sum));
  return {n, seconds, acks, n};
}

// -- Fibonacci -----------------------------------------------------------------------------
// fib(n) by recursive actor creation: the actor asked for k > 1 spawns two children, sends
// them k - 1 and k - 2, adds their answers and answers its parent, then quits. Each answer
// also carries the number of actors of its subtree. Timed: from the driver's request to the
// root's answer. Verified: the value equals the iterative fib(n); the actors counted equal
// 2 * fib(n + 1) - 1.

int64_t fibonacci(int64_t n) {
  int64_t a = 0, b = 1;
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = a + b;
    a = b;
    b = c;
  }
  return a;
}

struct fib_state {
  actor parent;
  int pending = 2;
  int64_t sum = 0;
  int64_t actors = 1;  // this actor, plus its children's subtrees
};

behavior fib_actor(stateful_actor<fib_state>* self, actor parent) {
  self->state.parent = std::move(parent);
  return {
    [=](fib_atom, int64_t k) {
      if (k < 2) {
        self->send(self->state.parent, answer_atom_v, k, int64_t{1});
        self->quit();
        return;
      }
      actor me{self};
      self->send(self->spawn(fib_actor, me), fib_atom_v, k - 1);
      self->send(self->spawn(fib_actor, me), fib_atom_v, k - 2);
    },
    [=](answer_atom, int64_t value, int64_t actors) {
      auto& st = self->state;
      st.sum += value;
      st.actors += actors;
      if (--st.pending == 0) {
        self->send(st.parent, answer_atom_v, st.sum, st.actors);
        self->quit();
      }
    },
  };
}

outcome fibonacci_workload(actor_system& sys, int64_t n) {
  scoped_actor self{sys};
  int64_t value = -1, actors = 0;
  auto start = clock_type::now();
  self->send(sys.spawn(fib_actor, actor{self}), fib_atom_v, n);
  receive_one(self, [&](answer_atom, int64_t v, int64_t a) {
    value = v;
    actors = a;
  });
  double seconds = seconds_since(start);
  int64_t expected_actors = 2 * fibonacci(n + 1) - 1;
  if (actors != expected_actors)
    fail("Fibonacci: " + std::to_string(actors) + " actors counted, expected "
         + std::to_string(expected_actors));
  return {actors, seconds, value, fibonacci(n)};
}

// -- MemoryPerIdleActor --------------------------------------------------------------------
// N actors, each handled one message (and acknowledged it) and is then idle; the driver keeps
// a handle to each. Measured: growth of the process's resident set (VmRSS, so page granularity)
// from before the first spawn to after the last acknowledgement, divided by N. The handles'
// vector is filled (with null handles) before the first reading, so it is not counted. Actors
// are made in batches of 1,000 whose acknowledgements are received before the next batch, so
// the messages' memory is reused rather than all held at once. Heap growth (mallinfo2) is
// printed to stderr for comparison.

struct idle_state {
  int64_t value = 0;
};

behavior idle_actor(stateful_actor<idle_state>* self) {
  return {
    [=](touch_atom) {
      ++self->state.value;
      return ack_atom_v;
    },
  };
}

int64_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoll(line.substr(6)) * 1024;  // "VmRSS:   1234 kB"
  fail("no VmRSS in /proc/self/status");
}

int64_t heap_bytes() {
  struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

void spawn_idle(actor_system& sys, scoped_actor& self, std::vector<actor>& actors, size_t from,
                size_t to) {
  constexpr size_t batch = 1000;
  for (size_t first = from; first < to; first += batch) {
    size_t last = std::min(first + batch, to);
    for (size_t i = first; i < last; ++i) {
      actors[i] = sys.spawn(idle_actor);
      self->send(actors[i], touch_atom_v);
    }
    size_t acked = first;
    self->receive_for(acked, last)(
      [](ack_atom) {}, [&](error& err) { fail("MemoryPerIdleActor: " + to_string(err)); });
  }
}

void memory_per_idle_actor(actor_system& sys, int64_t n) {
  scoped_actor self{sys};
  constexpr size_t warm_up = 100;  // first spawns on each thread set up per-thread caches
  std::vector<actor> actors(warm_up + static_cast<size_t>(n));
  spawn_idle(sys, self, actors, 0, warm_up);
  int64_t rss_before = resident_bytes(), heap_before = heap_bytes();
  spawn_idle(sys, self, actors, warm_up, actors.size());
  int64_t rss_after = resident_bytes(), heap_after = heap_bytes();
  int64_t per_actor = (rss_after - rss_before) / n;
  std::cerr << "peers (CAF): MemoryPerIdleActor: resident set +" << (rss_after - rss_before)
            << " B, heap (mallinfo2) +" << (heap_after - heap_before) << " B = "
            << (heap_after - heap_before) / n << " B per actor" << std::endl;
  std::printf("peer CAF MemoryPerIdleActor %lld 0 %lld -\n", static_cast<long long>(n),
              static_cast<long long>(per_actor));
  std::fflush(stdout);
  if (per_actor <= 0) fail("MemoryPerIdleActor: no growth measured");
  for (auto& a : actors)
    self->send_exit(a, exit_reason::user_shutdown);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "version") {
    std::printf("version CAF %d.%d.%d\n", CAF_MAJOR_VERSION, CAF_MINOR_VERSION,
                CAF_PATCH_VERSION);
    return 0;
  }
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " version | <Workload> <size>" << std::endl;
    return 64;
  }
  std::string workload = argv[1];
  char* end = nullptr;
  long long size = std::strtoll(argv[2], &end, 10);
  if (*end != '\0' || size < 1) fail("bad size: " + std::string(argv[2]));
  outcome (*run)(actor_system&, int64_t) = nullptr;
  if (workload == "PingPong") run = ping_pong;
  else if (workload == "Counting") run = counting;
  else if (workload == "ThreadRing") run = thread_ring;
  else if (workload == "ForkJoinCreation") run = fork_join_creation;
  else if (workload == "Fibonacci") run = fibonacci_workload;
  else if (workload != "MemoryPerIdleActor") fail("unknown workload: " + workload);
  actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);  // two cores; Troupe runs two workers
  actor_system sys{cfg};
  if (run == nullptr) {
    memory_per_idle_actor(sys, size);
  } else {
    int64_t warm_up = workload == "Fibonacci" ? std::max<int64_t>(size - 8, 2)
                                              : std::max<int64_t>(size / 100, 1);
    outcome unreported = run(sys, warm_up);
    if (unreported.check != unreported.expected) fail(workload + ": warm-up run failed");
    report(workload, run(sys, size));
  }
  return 0;  // the actor system waits for all actors to finish
}
