#pragma once
// The one event queue of a simulation. Time is seconds as double. Simultaneous events fire in an
// explicit, tested order (tests/simulator/test_event_queue.cpp):
//   key = (time_s, kind, seq), compared lexicographically, smallest first, where
//   kind orders what happens at one instant:  step_end < arrival < schedule < sample
//     step_end  a replica's step finishes: tokens are emitted, finished requests free their KV blocks;
//     arrival   a request reaches the router, which therefore sees the completions of that instant;
//     schedule  a replica forms its next batch, which therefore includes the arrivals of that instant;
//     sample    a timeline sample records the state after everything else at that instant;
//   seq is the insertion counter: events of one kind at one instant fire first-in, first-out.
// (Vidur's queue orders by (time, id, type) and its comment says otherwise; here the key is the code.)
#include <cstdint>
#include <vector>

namespace kvcap::sim {

enum class EventKind : std::uint8_t { step_end = 0, arrival = 1, schedule = 2, sample = 3 };

struct Event {
  double time_s = 0;
  EventKind kind = EventKind::arrival;
  std::uint64_t seq = 0;     ///< insertion order (assigned by the queue)
  std::uint32_t target =
      0;  ///< replica index (step_end, schedule); arrival: 0 the source's request, k + 1 a scheduled turn
};

/// The tie-break rule as a predicate: true when `a` fires before `b`.
inline bool fires_before(const Event& a, const Event& b) {
  if (a.time_s != b.time_s) return a.time_s < b.time_s;
  if (a.kind != b.kind) return a.kind < b.kind;
  return a.seq < b.seq;
}

/// Binary min-heap of events under fires_before. Holds only pending events (a few per replica).
class EventQueue {
 public:
  /// Throws std::invalid_argument for a time that is not finite.
  void push(double time_s, EventKind kind, std::uint32_t target = 0);
  Event pop();  ///< the first event under fires_before; precondition: !empty()
  const Event& top() const { return heap_.front(); }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  std::uint64_t pushed() const { return next_seq_; }

 private:
  std::vector<Event> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace kvcap::sim
