//===- ResultsToOutParams.h - results as caller buffers -------------------===//
//
// The step both pipelines share when a library's results become
// caller-allocated out-parameters.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_PIPELINES_RESULTSTOOUTPARAMS_H
#define GDN_LIB_PIPELINES_RESULTSTOOUTPARAMS_H

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::gdn {
/// Function results become out-parameters, public functions included, with
/// every allocation (static or dynamic) hoisted to the caller: the C ABI
/// then has no ownership transfer, and the kernels write their results
/// straight into the caller's buffers.
inline void addResultsToOutParams(OpPassManager &pm) {
  bufferization::BufferResultsToOutParamsPassOptions options;
  options.hoistStaticAllocs = true;
  options.hoistDynamicAllocs = true;
  options.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(options));
}
} // namespace mlir::gdn

#endif // GDN_LIB_PIPELINES_RESULTSTOOUTPARAMS_H
