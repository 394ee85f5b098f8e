// libFuzzer: the CSV trace reader (simulator/src/trace.cpp) through its public API. parse: a Trace or a
// TraceError naming the file and line, never a crash; a parsed trace is sorted, starts at 0 and has
// positive token counts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "kvcap/simulator/trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::istringstream in(text);
  try {
    const auto t = kvcap::sim::parse_trace_csv(in, "fuzz.csv");
    double last = 0;
    for (const auto& r : t.requests) {
      if (r.arrival_s < last) std::abort();  // sorted by arrival
      last = r.arrival_s;
    }
  } catch (const kvcap::sim::TraceError&) {
  }
  (void)kvcap::sim::parse_trace_time(text);
  return 0;
}
