// DeBERTa's disentangled attention bias as one operator: rmbench.DisentangledBias.
#pragma once

#include <onnxruntime_cxx_api.h>

namespace rmscore {

// The custom-op domain "rmbench" with DisentangledBias. The export with `attention:
// disentangled_bias` (workflow/rmbench/export/relative_shift.py) calls it; sessions register it before
// they load any model, which costs nothing for graphs without it. The domain lives as long as
// the process, as ORT requires of a domain added to session options.
Ort::CustomOpDomain& custom_op_domain();

}  // namespace rmscore
