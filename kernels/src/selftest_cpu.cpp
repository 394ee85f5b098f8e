// CPU self-tests: each CPU twin against its naive reference over randomised shapes. kvcap-kernels test-cpu runs
// them all on one random stream; tests/kernels (Catch2) runs them one family at a time.
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"
#include "decode_team.h"
#include "fixtures.h"
#include "kvcap/kernels/calibrate.h"
#include "kvcap/kernels/decode_attention.h"
#include "kvcap/kernels/gemm.h"
#include "kvcap/kernels/prefill_attention.h"
#include "kvcap/kernels/stream.h"
#include "prefill_tc.h"

namespace kvcap::kernels {

namespace {

using detail::Checks;
using detail::fmt_err;

void test_numeric(Checks& c, std::mt19937_64& rng) {
  // Every finite bf16 / fp16 / fp8 value survives widen -> narrow unchanged.
  int bad_bf16 = 0, bad_fp16 = 0, bad_fp8 = 0;
  for (std::uint32_t u = 0; u < 65536; ++u) {
    const auto h = static_cast<std::uint16_t>(u);
    if (((h >> 7) & 0xff) != 0xff && float_to_bf16(bf16_to_float(h)) != h) ++bad_bf16;
    if (((h >> 10) & 0x1f) != 0x1f && float_to_fp16(fp16_to_float(h)) != h) ++bad_fp16;
  }
  for (std::uint32_t u = 0; u < 256; ++u) {
    if ((u & 0x7f) == 0x7f) continue;  // NaN
    if (float_to_fp8e4m3(fp8e4m3_to_float(static_cast<std::uint8_t>(u))) != u) ++bad_fp8;
  }
  c.check(bad_bf16 == 0, "numeric.bf16_round_trip_all_values", std::to_string(bad_bf16) + " mismatches");
  c.check(bad_fp16 == 0, "numeric.fp16_round_trip_all_values", std::to_string(bad_fp16) + " mismatches");
  c.check(bad_fp8 == 0, "numeric.fp8_e4m3_round_trip_all_values", std::to_string(bad_fp8) + " mismatches");
  c.check(fp8e4m3_to_float(0x7e) == 448.0f && fp8e4m3_to_float(0x01) == 0.001953125f && fp8e4m3_to_float(0x08) == 0.015625f,
          "numeric.fp8_e4m3_known_values");
  c.check(fp16_to_float(0x3c00) == 1.0f && fp16_to_float(0x0001) == 5.9604644775390625e-8f &&
              bf16_to_float(0x3f80) == 1.0f,
          "numeric.fp16_bf16_known_values");
  // Quantisation error of random floats: e4m3 keeps 3 mantissa bits, so |x - q(x)| <= 2^-4 |x| for normals and
  // <= 2^-10 (half a subnormal step) below 2^-6; saturates at 448.
  std::uniform_real_distribution<float> uni(-500.0f, 500.0f);
  std::uniform_real_distribution<float> ex(-12.0f, 9.0f);
  int bad = 0;
  for (int i = 0; i < 200000; ++i) {
    float x = uni(rng);
    if (i % 2) x = std::copysign(std::exp2(ex(rng)), x);
    const float y = fp8e4m3_to_float(float_to_fp8e4m3(x));
    const float ax = std::fabs(x);
    const float tol = ax >= 448.0f ? ax - 448.0f : (ax < 0.015625f ? 0.0009765625f : ax * 0.0625f);
    if (std::fabs(x - y) > tol * 1.000001f) ++bad;
  }
  c.check(bad == 0, "numeric.fp8_e4m3_quantisation_error", std::to_string(bad) + " values outside e4m3 tolerance");
  bad = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = std::copysign(std::exp2(ex(rng)), uni(rng));
    if (std::fabs(fp16_to_float(float_to_fp16(x)) - x) > std::fabs(x) * 0.00048828125f + 2.98e-8f) ++bad;
    if (std::fabs(bf16_to_float(float_to_bf16(x)) - x) > std::fabs(x) * 0.00390625f) ++bad;
  }
  c.check(bad == 0, "numeric.fp16_bf16_quantisation_error", std::to_string(bad) + " values outside tolerance");
}

detail::DecodeFixtureShape random_decode_shape(std::mt19937_64& rng, int i) {
  detail::DecodeFixtureShape s;
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  s.batch = pick(1, 4);
  const int variant = i % 6;
  s.mla = variant == 5;
  if (s.mla) {
    s.num_kv_heads = 1;
    s.num_q_heads = pick(1, 16);
    s.head_dim_qk = 576;
    s.head_dim_v = 512;
  } else {
    s.num_kv_heads = pick(1, 3);
    s.num_q_heads = s.num_kv_heads * pick(1, 8);
    s.head_dim_qk = s.head_dim_v = (variant % 2) ? 64 : 128;
  }
  const int pages[3] = {16, 32, 64};
  s.page_size = pages[pick(0, 2)];
  s.kv_dtype = static_cast<KvDtype>(i % 3);
  if (s.kv_dtype == KvDtype::fp8_e4m3) {
    s.k_scale = 0.05f * static_cast<float>(pick(1, 40));
    s.v_scale = 0.05f * static_cast<float>(pick(1, 40));
  }
  for (int b = 0; b < s.batch; ++b) s.seq_lens.push_back(pick(1, i % 4 == 0 ? 700 : 200));
  return s;
}

std::string describe(const detail::DecodeFixtureShape& s) {
  std::ostringstream o;
  o << "batch=" << s.batch << " q_heads=" << s.num_q_heads << " kv_heads=" << s.num_kv_heads << " dqk=" << s.head_dim_qk
    << " dtype=" << to_string(s.kv_dtype) << " page=" << s.page_size << " lens=";
  for (int l : s.seq_lens) o << l << ",";
  return o.str();
}

void test_decode(Checks& c, std::mt19937_64& rng) {
  constexpr double kRefTol = 1e-4;  // float twin vs double reference; outputs are O(1)
  constexpr double kSplitTol = 1e-5;
  for (int i = 0; i < 30; ++i) {
    const auto shape = random_decode_shape(rng, i);
    const auto f = detail::make_decode_fixture(shape, rng);
    const std::size_t n = f.out_floats();
    std::vector<float> ref(n), contig(n), paged(n), split(n);
    decode_attention_reference(f.params(KvLayout::contiguous, ref.data()));
    decode_attention_cpu(f.params(KvLayout::contiguous, contig.data()), DecodeSplit{}, 2);
    decode_attention_cpu(f.params(KvLayout::paged, paged.data()), DecodeSplit{}, 2);
    const std::string d = describe(shape);
    const double e_ref = c.max_abs_diff(contig.data(), ref.data(), n);
    c.check(e_ref <= kRefTol, "decode.cpu_vs_reference", d + " " + fmt_err(e_ref, kRefTol));
    c.check(std::memcmp(paged.data(), contig.data(), n * sizeof(float)) == 0, "decode.paged_equals_contiguous_bitwise",
            d);
    // Forced split: chunks of 32 or 64 tokens.
    DecodeSplit s;
    s.chunk_tokens = (i % 2 ? 32 : 64);
    s.num_chunks = (f.max_len + s.chunk_tokens - 1) / s.chunk_tokens;
    decode_attention_cpu(f.params(i % 2 ? KvLayout::paged : KvLayout::contiguous, split.data()), s, 3);
    const double e_split = c.max_abs_diff(split.data(), contig.data(), n);
    c.check(e_split <= kSplitTol, "decode.split_merge_vs_unsplit", d + " chunks=" + std::to_string(s.num_chunks) + " " +
                                                                       fmt_err(e_split, kSplitTol));
  }
  // Split planning: every token covered, chunks tile-aligned.
  bool ok = true;
  for (int items : {1, 3, 8, 64, 500}) {
    for (int len : {1, 31, 257, 4096, 131072}) {
      const DecodeSplit s = plan_decode_split(items, len, 264);
      if (s.num_chunks > 1 && (s.chunk_tokens % kDecodeTileTokens != 0 || s.num_chunks * s.chunk_tokens < len ||
                               (s.num_chunks - 1) * s.chunk_tokens >= len)) {
        ok = false;
      }
    }
  }
  c.check(ok, "decode.plan_split_covers_sequence");
  // Unsupported shapes fail loudly.
  bool threw = false;
  try {
    detail::DecodeFixtureShape s;
    s.seq_lens = {4};
    s.head_dim_qk = s.head_dim_v = 128;
    auto f = detail::make_decode_fixture(s, rng);
    std::vector<float> out(f.out_floats());
    auto p = f.params(KvLayout::paged, out.data());
    p.page_size = 8;
    decode_attention_cpu(p, DecodeSplit{});
  } catch (const std::invalid_argument& e) {
    threw = std::string(e.what()).find("page_size 8") != std::string::npos;
  }
  c.check(threw, "decode.rejects_unsupported_page_size");
}

// The CUDA team kernel's structure emulated on the CPU (decode_team_emulation.cpp) against the double reference,
// over the awkward shapes: contexts of 1 token, not a multiple of the step (4), the page or the split chunk;
// group sizes 1-16 (3, 5, 12: padded head tiles; 16: two tiles); head dims 64 and 128; every dtype and layout.
void test_decode_emulation(Checks& c, std::mt19937_64& rng) {
  constexpr double kRefTol = 1e-4;
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int groups[] = {1, 2, 3, 4, 5, 8, 12, 16};
  const int lens[] = {1, 3, 4, 5, 15, 16, 17, 63, 255, 257, 600};
  for (int i = 0; i < 24; ++i) {
    detail::DecodeFixtureShape s;
    s.batch = pick(1, 3);
    s.num_kv_heads = pick(1, 2);
    s.num_q_heads = s.num_kv_heads * groups[i % 8];
    s.head_dim_qk = s.head_dim_v = (i / 8) % 2 ? 64 : 128;
    const int pages[3] = {16, 32, 64};
    s.page_size = pages[pick(0, 2)];
    s.kv_dtype = static_cast<KvDtype>(i % 3);
    if (s.kv_dtype == KvDtype::fp8_e4m3) s.k_scale = s.v_scale = 0.05f * static_cast<float>(pick(1, 40));
    for (int b = 0; b < s.batch; ++b) s.seq_lens.push_back(lens[pick(0, 10)]);
    const auto f = detail::make_decode_fixture(s, rng);
    const std::size_t n = f.out_floats();
    std::vector<float> ref(n), emu(n);
    const KvLayout layout = i % 2 ? KvLayout::paged : KvLayout::contiguous;
    decode_attention_reference(f.params(KvLayout::contiguous, ref.data()));
    DecodeSplit split;
    if (i % 3 == 1) {  // as the GPU splits: chunks of a multiple of 32 tokens
      split.chunk_tokens = 32 * pick(1, 3);
      split.num_chunks = (f.max_len + split.chunk_tokens - 1) / split.chunk_tokens;
    }
    decode_attention_gpu_emulation(f.params(layout, emu.data()), split);
    const double e = c.max_abs_diff(emu.data(), ref.data(), n);
    c.check(e <= kRefTol, "decode.gpu_emulation_vs_reference",
            describe(s) + " layout=" + to_string(layout) + " chunks=" + std::to_string(split.num_chunks) + " " +
                fmt_err(e, kRefTol));
  }
  // The shared pieces on their own: after the transposing butterfly lane tl owns head tl / (TEAM / G).
  c.check(team::owner_head(15, 16, 4) == 3 && team::owner_head(4, 16, 4) == 1 && team::owner_lane(3, 32, 8) == 12 &&
              team::owner_head(31, 32, 1) == 0,
          "decode.team_owner_mapping");
}

void test_gemm(Checks& c, std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < 12; ++i) {
    GemmParams p;
    p.m = i == 0 ? 1 : pick(1, 70);
    p.n = pick(1, 150);
    p.k = pick(1, 300);
    const auto a = detail::random_bf16(static_cast<std::size_t>(p.m) * p.k, rng);
    const auto b = detail::random_bf16(static_cast<std::size_t>(p.n) * p.k, rng);
    std::vector<float> out(static_cast<std::size_t>(p.m) * p.n), ref(out.size());
    p.a = a.data();
    p.b = b.data();
    p.c = ref.data();
    gemm_reference(p);
    p.c = out.data();
    gemm_cpu(p, 2);
    const double tol = 1e-6 * p.k + 1e-6;  // fp32 accumulation of k products of magnitude <= 1
    const double e = c.max_abs_diff(out.data(), ref.data(), out.size());
    c.check(e <= tol, "gemm.cpu_vs_triple_loop",
            "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) + " " + fmt_err(e, tol));
  }
}

// One prefill case through the double reference and through `candidate` (the CPU flash kernel, or the GPU
// kernel's emulation): the largest absolute difference of their outputs.
template <class Candidate>
double prefill_vs_reference(Checks& c, detail::PrefillCase& pc, Candidate candidate) {
  PrefillParams& p = pc.p;
  std::vector<float> out(pc.q.size()), ref(pc.q.size());
  p.q = pc.q.data();
  p.k = pc.k.data();
  p.v = pc.v.data();
  p.out = ref.data();
  prefill_attention_reference(p);
  p.out = out.data();
  candidate(p);
  return c.max_abs_diff(out.data(), ref.data(), out.size());
}

std::string prefill_shape(const PrefillParams& p) {
  return "S=" + std::to_string(p.seq_len) + " H=" + std::to_string(p.num_q_heads) + "/" +
         std::to_string(p.num_kv_heads) + " d=" + std::to_string(p.head_dim);
}

void test_prefill(Checks& c, std::mt19937_64& rng) {
  for (int i = 0; i < 8; ++i) {
    auto pc = detail::random_prefill_case(rng, 130, 2, 3, i % 2 ? 64 : 128);
    constexpr double kTol = 1e-4;
    const double e = prefill_vs_reference(c, pc, [](const PrefillParams& p) { prefill_attention_cpu(p, 2); });
    c.check(e <= kTol, "prefill.cpu_flash_vs_naive_softmax", prefill_shape(pc.p) + " " + fmt_err(e, kTol));
  }
}

// The tensor-core prefill kernel's structure emulated on the CPU (prefill_tc_emulation.cpp: ldmatrix and mma.sync
// fragments from the kernel's own addresses) against the double reference: prompts of 1 token, around the 64-row
// and 64-key tiles, GQA, d 64 and 128. P is rounded to bf16 before P.V, as on the GPU: the bound is 2^-8 max |v|.
void test_prefill_emulation(Checks& c, std::mt19937_64& rng) {
  const int lens[] = {1, 2, 15, 63, 64, 65, 127, 129, 200};
  for (int i = 0; i < 9; ++i) {
    auto pc = detail::random_prefill_case(rng, 1, 2, 3, i % 2 ? 64 : 128);
    PrefillParams& p = pc.p;
    p.seq_len = lens[i];
    pc.q.resize(static_cast<std::size_t>(p.seq_len) * p.num_q_heads * p.head_dim);
    pc.k.resize(static_cast<std::size_t>(p.seq_len) * p.num_kv_heads * p.head_dim);
    pc.v.resize(pc.k.size());
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    for (auto& x : pc.q) x = float_to_bf16(2.0f * uni(rng));
    for (auto& x : pc.k) x = float_to_bf16(2.0f * uni(rng));
    for (auto& x : pc.v) x = float_to_bf16(uni(rng));
    double vmax = 0;
    for (const auto x : pc.v) vmax = std::max(vmax, std::fabs(static_cast<double>(bf16_to_float(x))));
    const double tol = vmax / 256.0 + 1e-5;
    const double e = prefill_vs_reference(c, pc, [](const PrefillParams& q) { prefill_attention_gpu_emulation(q); });
    c.check(e <= tol, "prefill.gpu_emulation_vs_reference", prefill_shape(p) + " " + fmt_err(e, tol));
  }
  // The fragment maps on their own: lane 5 holds rows 1 and 9, columns 2 and 3 of an accumulator tile.
  c.check(prefill_tc::c_row(5, 0) == 1 && prefill_tc::c_row(5, 3) == 9 && prefill_tc::c_col(5, 0) == 2 &&
              prefill_tc::c_col(5, 1) == 3 && prefill_tc::visible(3, 3, 4) && !prefill_tc::visible(3, 4, 9),
          "prefill.fragment_maps");
}

void test_stream(Checks& c, std::mt19937_64& rng) {
  const std::size_t bytes = (std::size_t{1} << 20) + 4096;
  std::vector<std::uint8_t> src(bytes), dst(bytes, 0);
  for (auto& x : src) x = static_cast<std::uint8_t>(rng());
  c.check(stream_read_cpu(src.data(), bytes, 3) == stream_checksum_reference(src.data(), bytes), "stream.read_checksum");
  stream_copy_cpu(dst.data(), src.data(), bytes, 3);
  c.check(src == dst, "stream.copy_exact");
}

void test_fit(Checks& c, std::mt19937_64& rng) {
  std::vector<CalibrationPoint> pts;
  std::uniform_real_distribution<double> noise(-0.01, 0.01);
  int i = 0;
  for (double b = 1e6; b < 1e11; b *= 2.3, ++i) {
    CalibrationPoint p;
    p.kernel = "decode_attention";
    p.kv_dtype = "bf16";
    p.bytes = b;
    p.time_s = (5e-6 + b / 3e12) * (1.0 + noise(rng));
    p.holdout = i % 4 == 3;
    pts.push_back(p);
  }
  const DecodeFit f = fit_decode_model(pts);
  c.check(std::fabs(f.bandwidth_bytes_per_s / 3e12 - 1) < 0.02 && std::fabs(f.t0_s / 5e-6 - 1) < 0.05 &&
              f.holdout_max_relative_error < 0.03 && f.holdout_points > 0,
          "fit.recovers_t0_and_bandwidth",
          "t0=" + std::to_string(f.t0_s) + " bw=" + std::to_string(f.bandwidth_bytes_per_s));
}

// The families in run order.
struct Family {
  const char* name;
  void (*run)(Checks&, std::mt19937_64&);
};
constexpr Family kFamilies[] = {{"numeric", test_numeric},
                                {"decode", test_decode},
                                {"decode_emulation", test_decode_emulation},
                                {"gemm", test_gemm},
                                {"prefill_emulation", test_prefill_emulation},
                                {"prefill", test_prefill},
                                {"stream", test_stream},
                                {"fit", test_fit}};

}  // namespace

int run_cpu_selftests(std::ostream& log, std::uint64_t seed, SelftestCounts* counts) {
  Checks c(log);
  std::mt19937_64 rng(seed);
  for (const Family& f : kFamilies) f.run(c, rng);
  if (counts) *counts = {c.passed(), c.failed(), c.first_failure()};
  return c.finish("cpu");
}

const std::vector<std::string>& cpu_selftest_families() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Family& f : kFamilies) n.emplace_back(f.name);
    return n;
  }();
  return names;
}

SelftestCounts run_cpu_selftest(const std::string& family, std::ostream& log, std::uint64_t seed) {
  for (const Family& f : kFamilies) {
    if (family != f.name) continue;
    Checks c(log);
    std::mt19937_64 rng(seed);
    f.run(c, rng);
    return {c.passed(), c.failed(), c.first_failure()};
  }
  throw std::invalid_argument("unknown CPU self-test family '" + family + "'");
}

}  // namespace kvcap::kernels
