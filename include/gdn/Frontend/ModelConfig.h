//===- ModelConfig.h - the model description (JSON) -------------*- C++ -*-===//
//
// Parses and validates the model description of docs/model-description.md,
// or the config.json of a Hugging Face checkpoint (docs/huggingface.md).
// Every error names the field.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_FRONTEND_MODELCONFIG_H
#define GDN_FRONTEND_MODELCONFIG_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::gdn {

/// GDN and MLA: the design document's layers (gdn.gated_deltanet, gdn.mla);
/// QwenGDN and Attention: those of Qwen3.5 and Qwen3-Next
/// (gdn.qwen_gated_deltanet, gdn.gated_attention).
enum class LayerKind { GDN, MLA, QwenGDN, Attention };

/// Upper bounds of the description's sizes (docs/model-description.md):
/// several times the largest published models', and small enough that
/// every product of sizes the compiler forms (vocabulary x d_model, heads x
/// head dims x context) stays far below 2^63.
inline constexpr int64_t kMaxVocabulary = int64_t(1) << 24;
inline constexpr int64_t kMaxDimension = int64_t(1) << 17;
inline constexpr int64_t kMaxLayers = 1024;
inline constexpr int64_t kMaxContext = int64_t(1) << 24;
inline constexpr int64_t kMaxHeads = 1024;
inline constexpr int64_t kMaxHeadDim = 1024;
inline constexpr int64_t kMaxConvSize = 64;
/// norm_eps and rope_theta stay normal, finite float32 values.
inline constexpr double kMinNormEps = 1e-30, kMaxNormEps = 1.0;
inline constexpr double kMinRopeTheta = 1.0, kMaxRopeTheta = 1e30;

struct GdnSettings {
  int64_t numHeads = 0, headDim = 0, convSize = 0;
};

struct MlaSettings {
  int64_t numHeads = 0, qLoraRank = 0, kvLoraRank = 0, qkNopeHeadDim = 0,
          qkRopeHeadDim = 0, vHeadDim = 0;
  double ropeTheta = 0;
};

/// The linear-attention layer of the Qwen hybrids.
struct QwenGdnSettings {
  int64_t numKeyHeads = 0, numValueHeads = 0, keyHeadDim = 0,
          valueHeadDim = 0, convSize = 0;
  /// Qwen3-Next's in_proj_qkvz / in_proj_ba, rows grouped by key head.
  bool groupedProjections = false;
  int64_t convChannels() const {
    return 2 * numKeyHeads * keyHeadDim + numValueHeads * valueHeadDim;
  }
};

/// The gated softmax attention of the Qwen hybrids.
struct AttentionSettings {
  int64_t numHeads = 0, numKvHeads = 0, headDim = 0, rotaryDim = 0;
  double ropeTheta = 0;
};

/// A validated model description.
struct ModelConfig {
  /// The Hugging Face model_type ("qwen3_5_text", "qwen3_5",
  /// "qwen3_next"), or empty for gdn's own description.
  std::string modelType;
  /// Where the decoder's weights sit: "model." (embed_tokens, layers.N.*,
  /// norm); "model.language_model." in Qwen3.5's vision-language wrapper.
  std::string weightPrefix = "model.";
  /// Checkpoint tensors that are not part of the text model (a vision
  /// tower, a multi-token-prediction head) and are left unread.
  std::vector<std::string> ignoredWeightPrefixes;
  /// The block norms, the final norm and the attention q/k norms store
  /// their weight as the offset from one (Qwen3.5, Qwen3-Next).
  bool zeroCenteredNorms = false;
  std::optional<QwenGdnSettings> qwenGdn;
  std::optional<AttentionSettings> attention;
  int64_t vocabSize = 0, dModel = 0, numLayers = 0, mlpHiddenSize = 0,
          maxContext = 0;
  std::vector<LayerKind> layers;
  std::optional<GdnSettings> gdn;
  std::optional<MlaSettings> mla;
  double normEps = 0;
  bool tieEmbeddings = false;
  bool byteTokenizer = false;
};

/// Parses `json`: a Hugging Face config.json when it has a "model_type",
/// else gdn's model description; the error names the offending field.
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef json);

/// One of the two caches of a layer, in the order the step takes them.
struct CacheLayout {
  /// MLA latents and attention keys and values grow by one entry per
  /// token; GDN states have a fixed size.
  bool growsWithTokens;
  /// The shape without the batch dimension; for growing caches the first
  /// entry (the token count) is 0.
  llvm::SmallVector<int64_t> innerShape;
  /// For messages: "conv state", "delta-rule state", "latent cache", ...
  const char *name;
};

/// The caches of every layer, two per layer, in layer order.
std::vector<CacheLayout> cacheLayouts(const ModelConfig &config);

/// "gdn", "mla", "qwen_gdn" or "attention".
const char *layerKindName(LayerKind kind);

/// Whether a weight of this shape may stay bf16 in the compiled step: the
/// matrices (projections, embeddings, LM head), which hold nearly all the
/// bytes; vectors and conv kernels are widened to f32 once, at load.
inline bool isBf16Candidate(llvm::ArrayRef<int64_t> shape) {
  return shape.size() == 2;
}

/// The weight names of `config` and their shapes (docs/model-description.md).
std::map<std::string, llvm::SmallVector<int64_t>>
expectedWeightShapes(const ModelConfig &config);

} // namespace mlir::gdn

#endif // GDN_FRONTEND_MODELCONFIG_H
