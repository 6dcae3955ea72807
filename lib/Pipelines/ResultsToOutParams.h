//===- ResultsToOutParams.h - results as caller buffers -------------------===//
//
// The step both pipelines share when a library's results become
// caller-allocated out-parameters.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_PIPELINES_RESULTSTOOUTPARAMS_H
#define GDN_LIB_PIPELINES_RESULTSTOOUTPARAMS_H

#include "gdn/ABI/Passes.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::gdn {
/// Results of public functions become out-parameters, with every
/// allocation (static or dynamic) hoisted to the caller: the C ABI then has
/// no ownership transfer, and the kernels write their results straight into
/// the caller's buffers (gdn-results-to-out-params).
inline void addResultsToOutParams(OpPassManager &pm) {
  pm.addPass(createGdnResultsToOutParamsPass());
}
} // namespace mlir::gdn

#endif // GDN_LIB_PIPELINES_RESULTSTOOUTPARAMS_H
