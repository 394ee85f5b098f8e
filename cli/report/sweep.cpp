#include "report/sweep.hpp"

#include <charconv>
#include <cmath>
#include <exception>

#include "kvcap/escape.hpp"

namespace kvcap::cli {

namespace {
void put(std::string& b, double v) {
  if (!std::isfinite(v)) {
    b += "null";  // JSON has no infinity; CSV readers take "null" as missing
    return;
  }
  char tmp[32];
  const auto r = std::to_chars(tmp, tmp + sizeof tmp, v, std::chars_format::general, 6);
  b.append(tmp, r.ptr);
}
void put(std::string& b, i64 v) {
  char tmp[24];
  const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  b.append(tmp, r.ptr);
}
using escape::csv_field;
using escape::json_string;
}  // namespace

SweepWriter::SweepWriter(std::ostream& out, bool json) : out_(out), json_(json) {
  buf_.reserve(1 << 21);
  if (json_)
    buf_ += "[";
  else
    buf_ +=
        "model,gpu,tensor_parallel_size,pipeline_parallel_size,data_parallel_size,expert_parallel_size,weight_dtype,"
        "kv_cache_dtype,context_tokens,batch,fits,"
        "max_concurrency,tpot_s,ttft_s,tokens_per_s,tokens_per_s_per_user,bound\n";
}

SweepWriter::~SweepWriter() {
  // Unwinding from an error: what is still buffered is dropped, so a grid that fails early prints no rows
  // (one that fails after a megabyte of rows was streamed ends there, and the error says why).
  if (std::uncaught_exceptions() > 0) return;
  try {
    finish();
  } catch (...) {  // a destructor must not throw; finish() was called explicitly on the normal path
  }
}

void SweepWriter::series(const SweepSeries& s) {
  prefix_.clear();
  speed_ = s.speed_meaningful;
  if (json_) {
    prefix_ += "{\"model\":" + json_string(s.model) + ",\"gpu\":" + json_string(s.gpu) +
               ",\"tensor_parallel_size\":" + std::to_string(s.tp) +
               ",\"pipeline_parallel_size\":" + std::to_string(s.pp) +
               ",\"data_parallel_size\":" + std::to_string(s.dp) + ",\"expert_parallel_size\":" + std::to_string(s.ep) +
               ",\"weight_dtype\":" + json_string(s.weight_dtype) + ",\"kv_cache_dtype\":" + json_string(s.kv_dtype);
  } else {
    prefix_ += csv_field(s.model) + "," + csv_field(s.gpu) + "," + std::to_string(s.tp) + "," + std::to_string(s.pp) +
               "," + std::to_string(s.dp) + "," + std::to_string(s.ep) + "," + csv_field(s.weight_dtype) + "," +
               csv_field(s.kv_dtype) + ",";
  }
}

void SweepWriter::point(const SweepPoint& p) {
  std::string& b = buf_;
  const char* bound = p.bound == Bound::memory ? "memory" : "compute";
  if (json_) {
    b += rows_ == 0 ? "\n" : ",\n";
    b += prefix_;
    b += ",\"context_tokens\":", put(b, p.context_tokens);
    b += ",\"batch\":", put(b, p.batch);
    b += p.fits ? ",\"fits\":true" : ",\"fits\":false";
    b += ",\"max_concurrency\":", put(b, p.max_concurrency);
    if (speed_) {
      b += ",\"tpot_s\":", put(b, p.tpot_s);
      b += ",\"ttft_s\":", put(b, p.ttft_s);
      b += ",\"tokens_per_s\":", put(b, p.tokens_per_s);
      b += ",\"tokens_per_s_per_user\":", put(b, p.tokens_per_s_per_user);
      b += ",\"bound\":\"", b += bound, b += "\"}";
    } else {
      b += R"(,"tpot_s":null,"ttft_s":null,"tokens_per_s":null,"tokens_per_s_per_user":null,"bound":null})";
    }
  } else {
    b += prefix_;
    put(b, p.context_tokens), b += ',';
    put(b, p.batch), b += ',';
    b += p.fits ? "true," : "false,";
    put(b, p.max_concurrency), b += ',';
    if (speed_) {
      put(b, p.tpot_s), b += ',';
      put(b, p.ttft_s), b += ',';
      put(b, p.tokens_per_s), b += ',';
      put(b, p.tokens_per_s_per_user), b += ',';
      b += bound, b += '\n';
    } else {
      b += ",,,,\n";
    }
  }
  ++rows_;
  flush_if_full();
}

void SweepWriter::flush_if_full() {
  if (buf_.size() < (1u << 20)) return;
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

void SweepWriter::finish() {
  if (finished_) return;
  finished_ = true;
  if (json_) buf_ += rows_ == 0 ? "]\n" : "\n]\n";
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
  out_.flush();
}

}  // namespace kvcap::cli
