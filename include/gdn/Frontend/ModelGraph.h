//===- ModelGraph.h - a model description as gdn IR ------------*- C++ -*-===//

#ifndef GDN_FRONTEND_MODELGRAPH_H
#define GDN_FRONTEND_MODELGRAPH_H

#include "gdn/Frontend/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <set>
#include <string>

namespace mlir::gdn {

/// Which functions buildModelPrefill builds, and how.
struct ModelFunctions {
  /// Without it only @gdn_forward_step is built (the model runtime's C API
  /// runs a prefill as the step from empty caches).
  bool withPrefill = true;
  /// Each layer a call of a private function (@gdn_forward_step_layer<i>,
  /// with the layers that share it in its `gdn.layers` array): layers of
  /// one kind whose weights have the same types share one body, so the code
  /// of a deep model is generated once per distinct layer. The layer writes
  /// its output and new fixed-size caches into destinations its caller
  /// passes, and the growing caches in place, so that it returns no buffer
  /// of its own. Off, every layer is inlined: the
  /// CUDA pipeline orders one function's kernel launches on one stream,
  /// which calls would split.
  bool layerFunctions = true;
};

/// The prefill function of a model as gdn IR on tensors:
///
///   func.func @gdn_forward_prefill(%ids: tensor<?x?xi64>, <weights>)
///       -> tensor<?x?x vocab x f32>
///
/// with one f32 tensor argument per weight of expectedWeightShapes(config),
/// in that (sorted) order: embed, pre-norm residual blocks (gdn.rms_norm,
/// mixer (gdn.gated_deltanet or gdn.mla), gdn.swiglu_mlp), final norm, LM
/// head.
///
/// and, over the same weights, the step that continues sequences from their
/// caches (decode is T = 1; a longer T continues a prefill in chunks):
///
///   func.func @gdn_forward_step(%ids: tensor<?x?xi64>, <caches>, <weights>,
///                               %logit_rows: tensor<?xi64>)
///       -> (logits [B, L, vocab] at the L positions of %logit_rows among
///           the T new tokens, <fixed-size caches>)
///
/// with two caches per layer, in layer order (modelCacheTypes): for a GDN
/// layer the conv state [B, conv_size - 1, 3 d_out] and the delta-rule
/// state [B, H, D, D]; for an MLA layer the latents [B, P + T,
/// kv_lora_rank] and RoPE keys [B, P + T, qk_rope_head_dim]: the P tokens
/// so far, then room for the T new ones, which the step writes in place
/// (the ops' in_place_cache). Such a cache's argument is writable and may
/// have any distance between its sequences (bufferization.buffer_layout
/// strided<[?, ...]>), so that a runtime passes its own buffer, with room
/// for more tokens, and the step appends without copying it; only the
/// fixed-size caches are results.
///
/// The weights named in `bf16Weights` (matrices only: isBf16Candidate) are
/// bf16 tensors, read as they are stored and widened where they are used;
/// all others are f32.
FailureOr<OwningOpRef<ModuleOp>>
buildModelPrefill(MLIRContext *context, const ModelConfig &config, Location loc,
                  const std::set<std::string> &bf16Weights = {},
                  const ModelFunctions &functions = {});

/// The types of the caches of @gdn_forward_step, two per layer.
SmallVector<RankedTensorType> modelCacheTypes(MLIRContext *context,
                                              const ModelConfig &config);

/// Adds the strings the runtime of a compiled model reads (gdn_model.h):
/// the model description (JSON) as @_gdn_model_description and the path of
/// the weights to load by default as @_gdn_model_default_weights, both
/// zero-terminated constant llvm.mlir.global arrays.
/// The names of the weights the step takes as bf16 follow as
/// @_gdn_model_bf16_weights, one per line, and the path of the checkpoint's
/// tokenizer.json (or "") as @_gdn_model_tokenizer.
void embedModelStrings(ModuleOp module, StringRef description,
                       StringRef defaultWeights,
                       const std::set<std::string> &bf16Weights,
                       StringRef tokenizerPath);

} // namespace mlir::gdn

#endif // GDN_FRONTEND_MODELGRAPH_H
