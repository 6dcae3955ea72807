//===- ModelGraph.h - a model description as gdn IR ------------*- C++ -*-===//

#ifndef GDN_FRONTEND_MODELGRAPH_H
#define GDN_FRONTEND_MODELGRAPH_H

#include "gdn/Frontend/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::gdn {

/// The prefill function of a model as gdn IR on tensors:
///
///   func.func @gdn_model_prefill(%ids: tensor<?x?xi64>, <weights>)
///       -> tensor<?x?x vocab x f32>
///
/// with one f32 tensor argument per weight of expectedWeightShapes(config),
/// in that (sorted) order: embed, pre-norm residual blocks (gdn.rms_norm,
/// mixer (gdn.gated_deltanet or gdn.mla), gdn.swiglu_mlp), final norm, LM
/// head.
FailureOr<OwningOpRef<ModuleOp>> buildModelPrefill(MLIRContext *context,
                                                  const ModelConfig &config,
                                                  Location loc);

} // namespace mlir::gdn

#endif // GDN_FRONTEND_MODELGRAPH_H
