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
