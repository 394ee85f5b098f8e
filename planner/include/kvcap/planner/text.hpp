#pragma once
// Numbers as people read them in tables and messages, and the blank-trimming every text reader needs: one owner
// for the whole project (planner messages, the CLI's reporters, the loaders, the simulator's trace reader, the
// GUI). Programs get exact numbers in JSON and CSV instead.
#include <cstdint>
#include <string>
#include <string_view>

namespace kvcap {

std::string fixed(double v, int decimals);  ///< "3.21"; "unbounded" for infinity
/// fixed(), cut instead of rounded (to within 10^-6 of a digit): a capacity, where 0.9998 shown as "1.00" would
/// claim a request that does not fit. "unbounded" for infinity.
std::string fixed_down(double v, int decimals);
std::string gib(double bytes, int decimals = 2);       ///< "71.27" (GiB = 2^30 bytes; no unit)
std::string gib_text(double bytes, int decimals = 2);  ///< "71.27 GiB"
std::string human_bytes(double bytes);                 ///< "80.0 KiB", "1.25 GiB" (binary units)
std::string human_tokens(std::int64_t tokens);         ///< "1K", "128K", "1M", "1536"
std::string grouped(std::uint64_t v);                  ///< "420,208"
std::string billions(double v);                        ///< "70.55B"
/// fixed(v, decimals) within a table's width: 3 significant digits ("5.84e+07", "1.28e-07") from 10^5 up, and
/// for a non-zero value that would print as 0 at `decimals`.
std::string amount(double v, int decimals);
/// A duration: "0", "850 us", "12.5 ms", "3.20 s", "1000.0 s" (amount()'s digits from 10^5 s up).
std::string human_seconds(double s);

/// std::strtod for decimal text only: strtod also reads hexadecimal ("0x10" as 16, "0x1p13" as 8192), which no
/// vLLM flag, profile number or trace column takes; for those nothing is read (*end = s, 0 returned), so the
/// caller's "expected a number" applies. errno as strtod leaves it.
double strtod_decimal(const char* s, char** end);
/// Whether `s` (a number as typed) is written in hexadecimal, for a message that says "in decimal".
bool looks_hexadecimal(std::string_view s);

/// `s` without leading and trailing blanks (space, tab, CR, LF).
std::string_view trim(std::string_view s);
/// `s` in lower case (ASCII letters only; other bytes, UTF-8 included, unchanged).
std::string lowercase(std::string_view s);

}  // namespace kvcap
