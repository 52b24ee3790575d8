// A reward-model scorer on the ONNX Runtime C++ API: one session, batches of encodings in,
// one float score per row out.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <string>
#include <vector>

#include "tokenizer.h"

namespace rmscore {

struct EngineOptions {
  std::string device = "cpu";  // cpu | cuda
  int intra_op_threads = 0;    // 0 = ORT's default (all cores)
  bool zero_copy = true;       // inputs as Ort::Value over our own buffers, else copied into ORT-owned tensors
  bool preallocate = true;     // reuse input buffers across calls, else allocate per call
  // Run through an Ort::IoBinding (inputs bound over our buffers, the output bound to host
  // memory): "auto" does it on CUDA with zero_copy, where ORT then copies each input to the device
  // once and the score straight back; "on" forces it on CPU too (the tests run that code there).
  std::string io_binding = "auto";  // auto | on | off
  bool uses_io_binding() const { return io_binding == "on" || (io_binding == "auto" && device == "cuda" && zero_copy); }
};

// Input buffers one caller reuses across calls (preallocation on); never shared between threads.
struct Buffers {
  std::vector<int64_t> ids, mask, types, positions;
};

// The ONNX inputs the engine knows how to fill; a model with any other input is refused.
constexpr const char* kKnownInputs[] = {"input_ids", "attention_mask", "token_type_ids", "position_ids"};

class Engine {
 public:
  Engine(Ort::Env& env, const std::string& model_path, const EngineOptions& options, int64_t pad_id);
  // Scores a batch; rows are padded on the right to the longest one (position_ids, where the
  // model takes them, count each row's real tokens from 0; pads get 1, as transformers does). Thread-safe: concurrent callers share the
  // session, each with its own buffers.
  std::vector<float> score(const std::vector<const Encoding*>& batch, Buffers& buffers);
  bool preallocate() const { return options_.preallocate; }
  const std::vector<std::string>& input_names() const { return input_names_; }

 private:
  void fill(const std::vector<const Encoding*>& batch, size_t width, Buffers& b) const;

  EngineOptions options_;
  int64_t pad_id_;
  Ort::Session session_{nullptr};
  Ort::MemoryInfo cpu_memory_{nullptr};
  std::vector<std::string> input_names_, output_names_;
  std::vector<const char*> input_ptrs_, output_ptrs_;
  bool takes_positions_ = false;
};

// Session options as the Python side sets them (one intra-op pool, sequential execution).
Ort::SessionOptions session_options(const EngineOptions& options);
std::string ort_library_path();

}  // namespace rmscore
