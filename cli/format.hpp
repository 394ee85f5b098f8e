#pragma once
// Humanised numbers for people (tables). Programs get exact integers in JSON/CSV instead.
#include <cstdint>
#include <string>

namespace kvcap::cli {

std::string gib(double bytes, int decimals = 2);      ///< "71.27" (GiB = 2^30 bytes)
std::string human_bytes(double bytes);                 ///< "80.0 KiB", "1.25 GiB" (binary units)
std::string human_tokens(std::int64_t tokens);         ///< "1K", "128K", "1M", "1536"
std::string grouped(std::uint64_t v);                  ///< "420,208"
std::string fixed(double v, int decimals);             ///< "3.21"
std::string billions(double v);                        ///< "70.55B"

}  // namespace kvcap::cli
