//===- ModelConfig.h - the model description (JSON) -------------*- C++ -*-===//
//
// Parses and validates the model description of docs/model-description.md.
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

enum class LayerKind { GDN, MLA };

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

/// A validated model description.
struct ModelConfig {
  int64_t vocabSize = 0, dModel = 0, numLayers = 0, mlpHiddenSize = 0,
          maxContext = 0;
  std::vector<LayerKind> layers;
  std::optional<GdnSettings> gdn;
  std::optional<MlaSettings> mla;
  double normEps = 0;
  bool tieEmbeddings = false;
  bool byteTokenizer = false;
};

/// Parses `json`; the error names the offending field.
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef json);

/// The weight names of `config` and their shapes (docs/model-description.md).
std::map<std::string, llvm::SmallVector<int64_t>>
expectedWeightShapes(const ModelConfig &config);

} // namespace mlir::gdn

#endif // GDN_FRONTEND_MODELCONFIG_H
