//===- Transforms.h - gdn rewrite pattern entry points ----------*- C++ -*-===//

#ifndef GDN_DIALECT_GDN_TRANSFORMS_TRANSFORMS_H
#define GDN_DIALECT_GDN_TRANSFORMS_TRANSFORMS_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {

/// The largest chunk size of the chunked delta rule.
inline constexpr int64_t kMaxChunkSize = 1024;

/// Adds the pattern that rewrites gdn.delta_rule into its chunkwise-parallel
/// form with `chunkSize` tokens per chunk; sequences shorter than
/// `recurrentBelow` tokens take the token recurrence at run time.
void populateGdnChunkDeltaRulePatterns(RewritePatternSet &patterns,
                                       int64_t chunkSize,
                                       int64_t recurrentBelow = 0);

/// Adds the patterns that rewrite gdn.delta_rule with cu_seqlens or
/// state_indices, and gdn.delta_rule_step with state_indices, into dense ops
/// with loops that gather, slice and scatter around them.
void populateGdnUnpackSequencesPatterns(RewritePatternSet &patterns);

/// Adds the pattern that rewrites gdn.delta_rule_step into an scf.forall of
/// per-head tasks on static [K, V] states.
void populateGdnParallelizeDeltaRuleStepPatterns(RewritePatternSet &patterns);

/// Attaches linalg::AggregatedOpInterface to gdn's layer ops
/// (gdn.gated_deltanet, gdn.mla, gdn.rms_norm, gdn.swiglu_mlp, gdn.lm_head,
/// gdn.embed): each decomposes into core gdn ops and linalg on tensors.
void registerGdnDecompositionInterfaces(DialectRegistry &registry);

/// The same for the layers of the Hugging Face GDN hybrids
/// (gdn.qwen_gated_deltanet, gdn.gated_attention).
void registerQwenDecompositionInterfaces(DialectRegistry &registry);

} // namespace mlir::gdn

#endif // GDN_DIALECT_GDN_TRANSFORMS_TRANSFORMS_H
