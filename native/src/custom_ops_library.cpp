// librmbench_ops.so: the engine's custom operators for any ONNX Runtime session, e.g. Python's
// SessionOptions.register_custom_ops_library(path), which the parity gate uses. Built with
// ORT_API_MANUAL_INIT: the API comes from the loading runtime, not from a library linked here.
#include "disentangled_bias.h"

extern "C" __attribute__((visibility("default"))) OrtStatus* RegisterCustomOps(OrtSessionOptions* options,
                                                                               const OrtApiBase* api_base) {
  Ort::InitApi(api_base->GetApi(ORT_API_VERSION));
  try {
    Ort::UnownedSessionOptions(options).Add(rmscore::custom_op_domain());
  } catch (const Ort::Exception& e) {
    return Ort::GetApi().CreateStatus(ORT_FAIL, e.what());
  }
  return nullptr;
}
