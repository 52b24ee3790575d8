// rmbench.DisentangledBias(c2p, p2c) -> bias, all float32.
//
// c2p and p2c are [N, L, 2L-1]: every query (c2p) or key (p2c) scored against the position
// embeddings of the distances L-1 ... -(L-1), in that order (relative_shift.py builds them). The
// bias is [N, L, L] with bias[n, i, j] = c2p[n, i, L-1-i+j] + p2c[n, j, L-1-j+i].
// ONNX's own operators need two diagonal-shift copies, a transpose and an add for this: four
// passes over attention-sized tensors, which cost DeBERTa 10-15% of a row on 2 cores.
// Here it is one pass: square tiles keep the transposed reads of p2c in L1.
#include "disentangled_bias.h"

#include <algorithm>
#include <string>
#include <vector>

namespace rmscore {
namespace {

constexpr int64_t kTile = 16;

struct Shapes {
  const float* c2p;
  const float* p2c;
  float* bias;
  int64_t length;
};

void bias_of_one_matrix(void* data, size_t n) {
  const Shapes& s = *static_cast<const Shapes*>(data);
  const int64_t length = s.length, width = 2 * length - 1;
  const float* c2p = s.c2p + n * length * width;
  const float* p2c = s.p2c + n * length * width;
  float* bias = s.bias + n * length * length;
  for (int64_t i0 = 0; i0 < length; i0 += kTile) {
    const int64_t i1 = std::min(i0 + kTile, length);
    for (int64_t j0 = 0; j0 < length; j0 += kTile) {
      const int64_t j1 = std::min(j0 + kTile, length);
      for (int64_t i = i0; i < i1; ++i) {
        const float* c2p_row = c2p + i * width + (length - 1 - i);  // column L-1-i+j at [j]
        float* out = bias + i * length;
        // p2c[j, L-1-j+i] = p2c[j * (width - 1) + L-1+i]: row j's element moves one left per row.
        const float* p2c_column = p2c + (length - 1 + i);
        for (int64_t j = j0; j < j1; ++j) out[j] = c2p_row[j] + p2c_column[j * (width - 1)];
      }
    }
  }
}

struct DisentangledBiasKernel {
  DisentangledBiasKernel(const OrtApi& /*api*/, const OrtKernelInfo* /*info*/) {}

  void Compute(OrtKernelContext* raw) {
    Ort::KernelContext context(raw);
    Ort::ConstValue c2p = context.GetInput(0), p2c = context.GetInput(1);
    std::vector<int64_t> shape = c2p.GetTensorTypeAndShapeInfo().GetShape();
    if (shape.size() != 3 || shape[2] != 2 * shape[1] - 1 || shape[1] < 1 ||
        p2c.GetTensorTypeAndShapeInfo().GetShape() != shape)
      throw Ort::Exception("DisentangledBias takes c2p and p2c of one shape [N, L, 2L-1]", ORT_INVALID_ARGUMENT);
    const int64_t matrices = shape[0], length = shape[1];
    Ort::UnownedValue bias = context.GetOutput(0, {matrices, length, length});
    Shapes s{c2p.GetTensorData<float>(), p2c.GetTensorData<float>(), bias.GetTensorMutableData<float>(), length};
    // ORT's intra-op pool: the session's threads, none of our own.
    context.ParallelFor(bias_of_one_matrix, static_cast<size_t>(matrices), 0, &s);
  }
};

struct DisentangledBiasOp : Ort::CustomOpBase<DisentangledBiasOp, DisentangledBiasKernel> {
  void* CreateKernel(const OrtApi& api, const OrtKernelInfo* info) const { return new DisentangledBiasKernel(api, info); }
  const char* GetName() const { return "DisentangledBias"; }
  const char* GetExecutionProviderType() const { return "CPUExecutionProvider"; }
  size_t GetInputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
};

}  // namespace

Ort::CustomOpDomain& custom_op_domain() {
  static DisentangledBiasOp op;
  static Ort::CustomOpDomain domain = [] {
    Ort::CustomOpDomain d("rmbench");
    d.Add(&op);
    return d;
  }();
  return domain;
}

}  // namespace rmscore
