#pragma once
// GpuSpec: one accelerator's datasheet. Decimal units throughout (1 TB/s = 10^12 B/s); memory
// capacity is kept twice: as CUDA reports it (what vLLM multiplies by gpu_memory_utilization) and
// as marketed.
#include <string>
#include <vector>

#include "kvcap/planner/dtype.hpp"

namespace kvcap {

struct GpuSpec {
  std::string name;          ///< built-in name, e.g. "h100-sxm"
  std::string display_name;  ///< e.g. "NVIDIA H100 SXM5 80GB"
  std::string vendor;
  std::string architecture;
  u64 memory_bytes = 0;            ///< total device memory as CUDA reports it (torch total_memory)
  std::string memory_marketed;     ///< e.g. "80 GB HBM3"
  u64 memory_marketed_bytes = 0;
  double memory_bandwidth_bytes_per_s = 0;  ///< datasheet peak
  double bf16_dense_flops = 0;     ///< dense tensor-core FLOP/s (no sparsity)
  double fp16_dense_flops = 0;
  double fp8_dense_flops = 0;      ///< 0: no fp8 tensor cores
  double fp4_dense_flops = 0;      ///< 0: no fp4 tensor cores (NVFP4 weights then run weight-only, dequantised)
  double int8_dense_ops = 0;
  double fp32_flops = 0;
  std::string interconnect_name;
  double interconnect_bandwidth_bytes_per_s = 0;  ///< per direction
  double interconnect_latency_s = 0;
  /// One measured all-reduce over `tp` GPUs of this kind (interconnect.allreduce_measured): how long the
  /// collective of a `message_bytes` tensor took end to end, kernel and synchronisation included.
  struct AllReducePoint {
    i64 tp = 0;
    double message_bytes = 0;
    double time_s = 0;
  };
  /// Measured all-reduce times that replace the latency + bandwidth formula where they reach (allreduce_time_s in
  /// planner/speed.hpp); per TP size in increasing message size. Empty: the formula alone.
  std::vector<AllReducePoint> allreduce_measured;
  std::string allreduce_source;                ///< where allreduce_measured comes from
  std::string host_link_name;                  ///< GPU-to-host link, e.g. "PCIe Gen5 x16" (host_link.name)
  double host_link_bandwidth_bytes_per_s = 0;  ///< per direction, datasheet; 0: not known (KV offloading reload)
  /// Scale-out network per GPU (the NIC beside each GPU of the node, e.g. ConnectX-7 400 Gb/s): what a KV cache
  /// crosses between a disaggregated prefill worker and a decode worker on another node (planner/disagg.hpp).
  std::string network_name;
  double network_bandwidth_bytes_per_s = 0;  ///< per GPU, per direction; 0: not known
  double network_latency_s = 0;              ///< one transfer's fixed cost (RDMA write and completion)
  double tdp_watts = 0;
  double price_per_gpu_hour_usd = 0;
  std::vector<std::string> sources;
};

void validate(const GpuSpec& g);

}  // namespace kvcap
