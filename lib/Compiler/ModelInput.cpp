//===- ModelInput.cpp - model descriptions as compiler input --------------===//

#include "gdn/Compiler/ModelInput.h"
#include "gdn/Frontend/ModelGraph.h"

#include "mlir/IR/Location.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::gdn;

std::string mlir::gdn::defaultWeightsPath(StringRef descriptionPath) {
  llvm::SmallString<256> path(llvm::sys::path::parent_path(descriptionPath));
  llvm::sys::path::append(path, "model.safetensors");
  return std::string(path);
}

llvm::Expected<ModelInput>
mlir::gdn::loadModelInput(StringRef descriptionPath, StringRef descriptionText,
                          StringRef weightsPath) {
  llvm::Expected<ModelConfig> config = parseModelConfig(descriptionText);
  if (!config)
    return llvm::createStringError(descriptionPath + ": " +
                                   llvm::toString(config.takeError()));
  std::string weights = weightsPath.empty()
                            ? defaultWeightsPath(descriptionPath)
                            : weightsPath.str();
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::open(weights);
  if (!file)
    return file.takeError();
  if (llvm::Error error = validateWeights(*config, *file))
    return std::move(error);
  return ModelInput{descriptionPath.str(), descriptionText.str(),
                    std::move(*config), std::move(*file)};
}

void mlir::gdn::printModelSummary(const ModelInput &model,
                                  llvm::raw_ostream &os) {
  const ModelConfig &config = model.config;
  int64_t parameters = 0;
  for (const auto &entry : model.weights.tensors()) {
    int64_t count = 1;
    for (int64_t size : entry.second.shape)
      count *= size;
    parameters += count;
  }
  int64_t gdnLayers = llvm::count(config.layers, LayerKind::GDN);
  int64_t mlaLayers = config.layers.size() - gdnLayers;
  os << "model: " << config.numLayers << " layers (" << gdnLayers << " GDN, "
     << mlaLayers << " MLA), d_model " << config.dModel << ", vocab "
     << config.vocabSize << ", " << parameters << " parameters\n";
  os << "layers:";
  for (LayerKind kind : config.layers)
    os << (kind == LayerKind::GDN ? " gdn" : " mla");
  os << "\n";
  // The caches are f32: per GDN layer the [H, K, K] state and the conv
  // windows of q, k and v; per MLA layer and token the latent and RoPE key.
  int64_t gdnBytes = 0, mlaBytesPerToken = 0;
  if (config.gdn) {
    const GdnSettings &g = *config.gdn;
    gdnBytes = (g.numHeads * g.headDim * g.headDim +
                3 * (g.convSize - 1) * g.numHeads * g.headDim) *
               4 * gdnLayers;
  }
  if (config.mla)
    mlaBytesPerToken =
        (config.mla->kvLoraRank + config.mla->qkRopeHeadDim) * 4 * mlaLayers;
  os << "cache per sequence: GDN " << gdnBytes
     << " bytes (constant), MLA " << mlaBytesPerToken
     << " bytes per token (" << mlaBytesPerToken * config.maxContext
     << " at max_context " << config.maxContext << ")\n";
  os << "weights: " << model.weights.path() << " valid\n";
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::gdn::buildModelModule(MLIRContext *context, const ModelInput &model) {
  auto built = buildModelPrefill(
      context, model.config,
      FileLineColLoc::get(context, model.descriptionPath, 1, 1));
  if (failed(built))
    return failure();
  llvm::SmallString<256> absoluteWeights(model.weights.path());
  llvm::sys::fs::make_absolute(absoluteWeights);
  embedModelStrings(**built, model.descriptionText, absoluteWeights);
  return std::move(*built);
}
