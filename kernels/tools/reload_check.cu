// kvcap-reload-check: times vLLM's CPU->GPU reload of offloaded KV blocks and sets it beside kvcap's model of it.
// vLLM (vllm/v1/kv_offload/worker/cpu_gpu.py -> ops.swap_blocks) copies, for each KV tensor (one per layer), one
// block per cudaMemcpyAsync, scattered block ids on both sides, on one stream. kvcap (planner/host_tier.hpp)
// predicts copies x (per_copy_s + page_bytes / bandwidth) from the calibration's host_link fit, which was measured
// on contiguous chunks: this checks the model on the pattern it is used for.
//
//   kvcap-reload-check PER_COPY_S BANDWIDTH_BYTES_PER_S     (host_link.host_to_device of a calibration.yaml)
//
// Prints CSV: layers, page_bytes, blocks, tokens (16 per block), measured_ms (median of 5), model_ms, their ratio.
// Exit status 0, 2 for bad arguments, 1 for a CUDA error, 77 without a device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace {

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "kvcap-reload-check: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// One KV layout: `layers` tensors of `page` bytes per block (Llama 3.1 8B bf16 on one GPU: 32 x 64 KiB; Llama 3.1
// 70B at TP 8: 80 x 8 KiB, here 40 x 16 KiB, a pipeline stage at TP 4). Returns false on a CUDA error.
bool check_layout(int layers, std::size_t page, double per_copy_s, double bandwidth) {
  constexpr int kHostBlocks = 2048, kDeviceBlocks = 4096;
  std::vector<char*> host(static_cast<std::size_t>(layers), nullptr), dev(static_cast<std::size_t>(layers), nullptr);
  bool good = true;
  for (int l = 0; l < layers && good; ++l) {
    good = ok(cudaHostAlloc(reinterpret_cast<void**>(&host[l]), page * kHostBlocks, cudaHostAllocDefault),
              "cudaHostAlloc") &&
           ok(cudaMalloc(reinterpret_cast<void**>(&dev[l]), page * kDeviceBlocks), "cudaMalloc");
    if (good) std::memset(host[l], l, page * kHostBlocks);
  }
  cudaStream_t s = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  good = good && ok(cudaStreamCreate(&s), "cudaStreamCreate") && ok(cudaEventCreate(&a), "cudaEventCreate") &&
         ok(cudaEventCreate(&b), "cudaEventCreate");
  std::mt19937 rng(7);
  for (int blocks : {64, 512, 2048}) {
    if (!good) break;
    std::vector<int> src(kHostBlocks), dst(kDeviceBlocks);
    std::iota(src.begin(), src.end(), 0);
    std::iota(dst.begin(), dst.end(), 0);
    std::vector<float> ms;
    for (int rep = 0; rep < 6 && good; ++rep) {  // a warm-up, then 5 timed
      std::shuffle(src.begin(), src.end(), rng);
      std::shuffle(dst.begin(), dst.end(), rng);
      good = ok(cudaEventRecord(a, s), "cudaEventRecord");
      for (int l = 0; l < layers && good; ++l)
        for (int i = 0; i < blocks && good; ++i)
          good = ok(cudaMemcpyAsync(dev[l] + static_cast<std::size_t>(dst[i]) * page,
                                    host[l] + static_cast<std::size_t>(src[i]) * page, page, cudaMemcpyHostToDevice, s),
                    "cudaMemcpyAsync");
      float t = 0;
      good = good && ok(cudaEventRecord(b, s), "cudaEventRecord") && ok(cudaEventSynchronize(b), "sync") &&
             ok(cudaEventElapsedTime(&t, a, b), "cudaEventElapsedTime");
      if (rep > 0) ms.push_back(t);
    }
    if (!good) break;
    std::sort(ms.begin(), ms.end());
    const double measured = ms[ms.size() / 2];
    const double model = 1e3 * blocks * layers * (per_copy_s + static_cast<double>(page) / bandwidth);
    std::printf("%d,%zu,%d,%d,%.3f,%.3f,%.3f\n", layers, page, blocks, blocks * 16, measured, model, model / measured);
  }
  for (int l = 0; l < layers; ++l) {
    if (host[l] != nullptr) cudaFreeHost(host[l]);
    if (dev[l] != nullptr) cudaFree(dev[l]);
  }
  if (a != nullptr) cudaEventDestroy(a);
  if (b != nullptr) cudaEventDestroy(b);
  if (s != nullptr) cudaStreamDestroy(s);
  return good;
}

}  // namespace

int main(int argc, char** argv) {
  char* end1 = nullptr;
  char* end2 = nullptr;
  const double per_copy_s = argc == 3 ? std::strtod(argv[1], &end1) : -1;
  const double bandwidth = argc == 3 ? std::strtod(argv[2], &end2) : -1;
  if (argc != 3 || *end1 != '\0' || *end2 != '\0' || !(per_copy_s >= 0 && per_copy_s < 1) ||
      !(bandwidth > 1e6 && bandwidth < 1e15)) {
    std::fprintf(stderr, "usage: kvcap-reload-check PER_COPY_S BANDWIDTH_BYTES_PER_S (a calibration's "
                         "host_link.host_to_device, e.g. 2.7e-6 5.37e10)\n");
    return 2;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("kvcap-reload-check: no CUDA device: nothing to measure\n");
    return 77;
  }
  std::printf("layers,page_bytes,blocks,tokens,measured_ms,model_ms,model_over_measured\n");
  return check_layout(40, 16384, per_copy_s, bandwidth) && check_layout(32, 65536, per_copy_s, bandwidth) ? 0 : 1;
}
