#include "collector.hpp"

#include <algorithm>

#include "kvcap/simulator/simulator.hpp"

namespace kvcap::sim {

void Collector::record(const Request& r, std::uint32_t replica, double now) {
  const double ttft = r.first_token_s - r.arrival_s, e2e = now - r.arrival_s;
  ttft_.add(ttft);
  e2e_.add(e2e);
  queue_.add(r.first_scheduled_s - r.arrival_s);
  bool met = !slo_.ttft_s || ttft <= *slo_.ttft_s;
  if (r.output_tokens > 1) {
    // TPOT: time per output token after the first (vLLM benchmarks' definition).
    const double tpot = (e2e - ttft) / static_cast<double>(r.output_tokens - 1);
    tpot_.add(tpot);
    met = met && (!slo_.tpot_s || tpot <= *slo_.tpot_s);
  }
  ++completed_;
  slo_met_ += met ? 1 : 0;
  prompt_tokens_ += static_cast<std::uint64_t>(r.prompt_tokens);
  output_tokens_ += static_cast<std::uint64_t>(r.output_tokens);
  last_completion_s_ = std::max(last_completion_s_, now);
  if (r.conversation >= 0) finished_turns_.emplace_back(r.conversation, r.generated);
  if (!observer_) return;
  RequestRecord rec;
  rec.id = r.id;
  rec.replica = replica;
  rec.arrival_s = r.arrival_s;
  rec.first_scheduled_s = r.first_scheduled_s;
  rec.first_token_s = r.first_token_s;
  rec.finish_s = now;
  rec.prompt_tokens = r.prompt_tokens;
  rec.output_tokens = r.generated;
  rec.cached_prompt_tokens = r.cached_tokens;
  rec.preemptions = r.preemptions;
  rec.truncated = r.truncated;
  rec.conversation = r.conversation;
  rec.turn = r.turn;
  observer_->on_request_done(rec);
}

void Collector::hand_off(const Request& r, double /*now*/) {
  Handoff h;
  h.spec.arrival_s = r.arrival_s;
  h.spec.prompt_tokens = r.prompt_tokens;
  h.spec.output_tokens = r.handoff_output_tokens;
  h.spec.prefix_group = r.prefix_group;
  h.spec.prefix_tokens = r.prefix_tokens;
  h.spec.conversation = r.conversation;
  h.spec.turn = r.turn;
  h.spec.prompt_repeats = r.prompt_repeats;
  h.id = r.id;
  h.output_tokens = r.handoff_output_tokens;
  h.truncated = r.truncated;
  h.first_scheduled_s = r.first_scheduled_s;
  h.cached_tokens = r.cached_tokens;
  handoffs_.push_back(h);
}

void Collector::summarize(SimResult& res) const {
  res.requests_completed = completed_;
  res.ttft_s = ttft_.summary();
  res.tpot_s = tpot_.summary();
  LogHistogram itl = itl_;
  itl.add(itl_run_s_, itl_run_n_);
  res.itl_s = itl.summary();
  res.e2e_s = e2e_.summary();
  res.queue_s = queue_.summary();
  res.prompt_tokens = prompt_tokens_;
  res.output_tokens = output_tokens_;
  res.slo_met = slo_met_;
  const double span = res.end_s - res.first_arrival_s;
  if (span > 0) {
    res.requests_per_s = static_cast<double>(completed_) / span;
    res.output_tokens_per_s = static_cast<double>(output_tokens_) / span;
    res.prompt_tokens_per_s = static_cast<double>(prompt_tokens_) / span;
    res.goodput_requests_per_s = static_cast<double>(slo_met_) / span;
  }
}

}  // namespace kvcap::sim
