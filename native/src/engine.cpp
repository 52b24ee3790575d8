#include "engine.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "disentangled_bias.h"
#include "errors.h"

namespace rmscore {

Ort::SessionOptions session_options(const EngineOptions& options) {
  Ort::SessionOptions so;
  if (options.intra_op_threads > 0) so.SetIntraOpNumThreads(options.intra_op_threads);
  so.SetInterOpNumThreads(1);
  so.SetExecutionMode(ExecutionMode::ORT_SEQUENTIAL);
  so.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  so.Add(custom_op_domain());  // the engine's own operators, for exports that call them
  if (options.device == "cuda") {
    auto providers = Ort::GetAvailableProviders();
    if (std::find(providers.begin(), providers.end(), "CUDAExecutionProvider") == providers.end())
      throw Error(ExitCode::no_device, "this ONNX Runtime library (" + ort_library_path() +
                                           ") has no CUDAExecutionProvider; use --device cpu or an onnxruntime-gpu build");
    OrtCUDAProviderOptions cuda{};
    so.AppendExecutionProvider_CUDA(cuda);
  } else if (options.device != "cpu") {
    throw Error(ExitCode::usage, "unknown device '" + options.device + "' (cpu | cuda)");
  }
  return so;
}

std::string ort_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&OrtGetApiBase), &info) && info.dli_fname)
    return std::filesystem::canonical(info.dli_fname).string();
  return "unknown";
}

Engine::Engine(Ort::Env& env, const std::string& model_path, const EngineOptions& options, int64_t pad_id)
    : options_(options), pad_id_(pad_id) {
  if (!std::filesystem::exists(model_path)) throw Error(ExitCode::missing_file, "model not found: " + model_path);
  try {
    session_ = Ort::Session(env, model_path.c_str(), session_options(options));
  } catch (const Ort::Exception& e) {
    throw Error(ExitCode::runtime, std::string("cannot load ") + model_path + ": " + e.what());
  }
  cpu_memory_ = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  Ort::AllocatorWithDefaultOptions allocator;
  for (size_t i = 0; i < session_.GetInputCount(); ++i)
    input_names_.emplace_back(session_.GetInputNameAllocated(i, allocator).get());
  for (size_t i = 0; i < session_.GetOutputCount(); ++i)
    output_names_.emplace_back(session_.GetOutputNameAllocated(i, allocator).get());
  for (auto& n : input_names_) {
    if (std::find(std::begin(kKnownInputs), std::end(kKnownInputs), n) == std::end(kKnownInputs))
      throw Error(ExitCode::mismatch, model_path + " takes the input '" + n +
                                          "', which the engine does not know how to fill (it fills input_ids, "
                                          "attention_mask, token_type_ids and position_ids)");
    input_ptrs_.push_back(n.c_str());
  }
  for (auto& n : output_names_) output_ptrs_.push_back(n.c_str());
  takes_positions_ = std::find(input_names_.begin(), input_names_.end(), "position_ids") != input_names_.end();
}

void Engine::fill(const std::vector<const Encoding*>& batch, size_t width, Buffers& b) const {
  size_t n = batch.size() * width;
  b.ids.assign(n, pad_id_);  // assign() keeps a reused vector's capacity: no allocation
  b.mask.assign(n, 0);
  b.types.assign(n, 0);
  if (takes_positions_) b.positions.assign(n, 1);
  for (size_t r = 0; r < batch.size(); ++r) {
    const Encoding& e = *batch[r];
    std::copy(e.input_ids.begin(), e.input_ids.end(), b.ids.begin() + r * width);
    std::fill(b.mask.begin() + r * width, b.mask.begin() + r * width + e.size(), 1);
    std::copy(e.token_type_ids.begin(), e.token_type_ids.end(), b.types.begin() + r * width);
    if (takes_positions_)
      for (size_t k = 0; k < e.size(); ++k) b.positions[r * width + k] = static_cast<int64_t>(k);
  }
}

std::vector<float> Engine::score(const std::vector<const Encoding*>& batch, Buffers& reused) {
  size_t width = 0;
  for (auto* e : batch) width = std::max(width, e->size());
  Buffers fresh;
  Buffers& b = options_.preallocate ? reused : fresh;
  fill(batch, width, b);

  const int64_t shape[2] = {static_cast<int64_t>(batch.size()), static_cast<int64_t>(width)};
  Ort::AllocatorWithDefaultOptions allocator;
  std::vector<Ort::Value> inputs;
  for (const auto& name : input_names_) {
    std::vector<int64_t>& data = name == "input_ids"        ? b.ids
                                 : name == "attention_mask" ? b.mask
                                 : name == "position_ids"   ? b.positions
                                                            : b.types;
    if (options_.zero_copy) {
      inputs.push_back(Ort::Value::CreateTensor<int64_t>(cpu_memory_, data.data(), data.size(), shape, 2));
    } else {
      inputs.push_back(Ort::Value::CreateTensor<int64_t>(allocator, shape, 2));
      std::memcpy(inputs.back().GetTensorMutableData<int64_t>(), data.data(), data.size() * sizeof(int64_t));
    }
  }
  std::vector<Ort::Value> outputs;
  try {
    if (options_.uses_io_binding()) {
      Ort::IoBinding binding(session_);
      for (size_t i = 0; i < inputs.size(); ++i) binding.BindInput(input_ptrs_[i], inputs[i]);
      binding.BindOutput(output_ptrs_[0], cpu_memory_);
      session_.Run(Ort::RunOptions{nullptr}, binding);
      binding.SynchronizeOutputs();
      outputs = binding.GetOutputValues();
    } else {
      outputs = session_.Run(Ort::RunOptions{nullptr}, input_ptrs_.data(), inputs.data(), inputs.size(),
                             output_ptrs_.data(), output_ptrs_.size());
    }
  } catch (const Ort::Exception& e) {
    std::string what = e.what();
    if (what.find("out of data bounds") != std::string::npos || what.find("indices") != std::string::npos)
      throw Error(ExitCode::mismatch, "model/tokenizer mismatch: a token id lies beyond the model's vocabulary (" + what + ")");
    throw Error(ExitCode::runtime, "inference failed: " + what);
  }
  const float* logits = outputs[0].GetTensorData<float>();
  size_t per_row = outputs[0].GetTensorTypeAndShapeInfo().GetElementCount() / batch.size();
  std::vector<float> scores(batch.size());
  for (size_t r = 0; r < batch.size(); ++r) scores[r] = logits[r * per_row];
  return scores;
}

}  // namespace rmscore
