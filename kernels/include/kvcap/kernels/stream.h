// Stream kernels: the physical memory ceiling. Read touches every byte once; copy reads and writes every byte
// (so it moves 2 x bytes). Buffers must be far larger than the last-level cache to measure DRAM/HBM.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvcap::kernels {

// XOR of all 32-bit words of `bytes` (a multiple of 16) bytes: the read checksum the GPU kernel also computes.
std::uint32_t stream_read_cpu(const void* src, std::size_t bytes, int num_threads = 0);
void stream_copy_cpu(void* dst, const void* src, std::size_t bytes, int num_threads = 0);
// Single-threaded XOR checksum. For tests.
std::uint32_t stream_checksum_reference(const void* src, std::size_t bytes);

}  // namespace kvcap::kernels
