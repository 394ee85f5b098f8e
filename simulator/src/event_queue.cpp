#include "kvcap/simulator/event_queue.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kvcap::sim {

namespace {
// std heap functions keep the *largest* element first under the comparator, so "larger" = fires later.
bool fires_later(const Event& a, const Event& b) { return fires_before(b, a); }
}  // namespace

void EventQueue::push(double time_s, EventKind kind, std::uint32_t target) {
  if (!std::isfinite(time_s)) throw std::invalid_argument("event time must be finite");
  heap_.push_back(Event{time_s, kind, next_seq_++, target});
  std::push_heap(heap_.begin(), heap_.end(), fires_later);
}

Event EventQueue::pop() {
  std::pop_heap(heap_.begin(), heap_.end(), fires_later);
  const Event e = heap_.back();
  heap_.pop_back();
  return e;
}

}  // namespace kvcap::sim
