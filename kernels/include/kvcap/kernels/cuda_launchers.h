// Host launchers of the CUDA kernels (only in builds with KVCAP_WITH_CUDA). Each takes device pointers and a stream,
// returns cudaError_t, and rejects unsupported shapes with cudaErrorInvalidValue; last_launch_error() then says why.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "kvcap/kernels/decode_attention.h"
#include "kvcap/kernels/gemm.h"
#include "kvcap/kernels/prefill_attention.h"

namespace kvcap::kernels {

// Message of the last cudaErrorInvalidValue returned by a launcher on this host thread.
const std::string& last_launch_error();

// XOR of all 32-bit words of src (bytes % 16 == 0) into *checksum (device; caller zeroes it). grid_blocks <= 0: auto.
cudaError_t stream_read_gpu(const void* src, std::size_t bytes, std::uint32_t* checksum, int grid_blocks,
                            cudaStream_t stream);
cudaError_t stream_copy_gpu(void* dst, const void* src, std::size_t bytes, int grid_blocks, cudaStream_t stream);
// Fill with bytes that read as finite moderate bf16/fp16/fp8 values (bytes % 8 == 0).
cudaError_t fill_valid_bytes_gpu(void* dst, std::size_t bytes, std::uint64_t seed, cudaStream_t stream);

// Query heads per thread block (a GQA group larger than this is split over blocks): 8, or 16 for MLA.
int decode_max_group_per_block(const DecodeParams& p);
// Thread blocks before splitting: batch x kv heads x query-head tiles (feed plan_decode_split with it).
int decode_work_items(const DecodeParams& p);
// Thread blocks of the kernel that serves p that are resident on the current device at once (occupancy x SMs); 0 if
// the query fails. Split so that the grid is several such waves: plan_decode_split(items, len, 4 x this).
int decode_resident_blocks(const DecodeParams& p);
// workspace: device floats, at least decode_workspace_floats(p, split) (unused when split.num_chunks == 1).
cudaError_t decode_attention_gpu(const DecodeParams& p, const DecodeSplit& split, float* workspace, cudaStream_t stream);

// Tensor-core (WMMA bf16, fp32 accumulate) GEMM. Needs k % 8 == 0.
cudaError_t gemm_mma_gpu(const GemmParams& p, cudaStream_t stream);

cudaError_t prefill_attention_gpu(const PrefillParams& p, cudaStream_t stream);

}  // namespace kvcap::kernels
