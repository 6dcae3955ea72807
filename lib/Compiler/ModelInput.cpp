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
                          StringRef weightsPath, MatrixDtype matrices) {
  llvm::Expected<ModelConfig> config = parseModelConfig(descriptionText);
  if (!config)
    return llvm::createStringError(descriptionPath + ": " +
                                   llvm::toString(config.takeError()));
  std::string weights = !weightsPath.empty()
                            ? weightsPath.str()
                            : weightsPathOf(descriptionPath, *config);
  llvm::Expected<WeightFiles> file = WeightFiles::open(weights);
  if (!file)
    return file.takeError();
  if (llvm::Error error = validateWeights(*config, *file))
    return std::move(error);
  std::set<std::string> bf16Weights;
  for (const auto &[name, shape] : expectedWeightShapes(*config))
    if (isBf16Candidate(shape) &&
        (matrices == MatrixDtype::BF16 ||
         (matrices == MatrixDtype::AsStored &&
          file->find(name)->dtype == "BF16")))
      bf16Weights.insert(name);
  std::string tokenizer;
  if (!config->modelType.empty()) {
    llvm::SmallString<256> path(llvm::sys::path::parent_path(descriptionPath));
    llvm::sys::path::append(path, "tokenizer.json");
    if (llvm::sys::fs::is_regular_file(path)) {
      llvm::sys::fs::make_absolute(path);
      tokenizer = std::string(path);
    }
  }
  return ModelInput{descriptionPath.str(), descriptionText.str(),
                    std::move(*config), std::move(*file),
                    std::move(bf16Weights), std::move(tokenizer)};
}

std::string mlir::gdn::weightsPathOf(StringRef descriptionPath,
                                     const ModelConfig &config) {
  // A checkpoint's weights are its folder's (one file or shards).
  if (config.modelType.empty())
    return defaultWeightsPath(descriptionPath);
  std::string folder(llvm::sys::path::parent_path(descriptionPath));
  return folder.empty() ? "." : folder;
}

void mlir::gdn::printModelSummary(const ModelInput &model,
                                  llvm::raw_ostream &os) {
  printConfigSummary(model.config, os);
  const ModelConfig &config = model.config;
  os << "weights: " << model.weights.path() << " valid ("
     << model.weights.files().size() << " file"
     << (model.weights.files().size() == 1 ? "" : "s") << "); "
     << model.bf16Weights.size()
     << " matrices stay bf16 in the step, the rest is f32\n";
  if (!model.tokenizerPath.empty())
    os << "tokenizer: " << model.tokenizerPath << "\n";
  for (const auto &[prefix, count] : ignoredWeights(config, model.weights))
    os << "ignored: " << count << " tensors " << prefix
       << "* (not part of the text model)\n";
}

void mlir::gdn::printConfigSummary(const ModelConfig &config,
                                   llvm::raw_ostream &os) {
  int64_t parameters = 0;
  for (const auto &entry : expectedWeightShapes(config)) {
    int64_t count = 1;
    for (int64_t size : entry.second)
      count *= size;
    parameters += count;
  }
  int64_t gdnLayers = llvm::count_if(config.layers, [](LayerKind kind) {
    return kind == LayerKind::GDN || kind == LayerKind::QwenGDN;
  });
  const char *other = config.modelType.empty() ? "MLA" : "attention";
  os << "model: ";
  if (!config.modelType.empty())
    os << config.modelType << ", ";
  os << config.numLayers << " layers (" << gdnLayers << " GDN, "
     << config.numLayers - gdnLayers << " " << other << "), d_model " << config.dModel << ", vocab " << config.vocabSize
     << ", " << parameters << " parameters\n";
  os << "layers:";
  for (LayerKind kind : config.layers)
    os << " " << layerKindName(kind);
  os << "\n";
  // The caches are f32: fixed-size GDN states, and per token the MLA
  // latents and RoPE keys or the attention keys and values.
  int64_t fixedBytes = 0, bytesPerToken = 0;
  for (const CacheLayout &cache : cacheLayouts(config)) {
    int64_t count = 4;
    for (int64_t size : llvm::ArrayRef<int64_t>(cache.innerShape)
                            .drop_front(cache.growsWithTokens ? 1 : 0))
      count *= size;
    (cache.growsWithTokens ? bytesPerToken : fixedBytes) += count;
  }
  os << "cache per sequence: GDN " << fixedBytes << " bytes (constant), "
     << other << " " << bytesPerToken << " bytes per token ("
     << bytesPerToken * config.maxContext << " at max_context "
     << config.maxContext << ")\n";
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::gdn::buildModelModule(MLIRContext *context, const ModelInput &model,
                            const ModelFunctions &functions) {
  auto built = buildModelPrefill(
      context, model.config,
      FileLineColLoc::get(context, model.descriptionPath, 1, 1),
      model.bf16Weights, functions);
  if (failed(built))
    return failure();
  llvm::SmallString<256> absoluteWeights(model.weights.path());
  llvm::sys::fs::make_absolute(absoluteWeights);
  embedModelStrings(**built, model.descriptionText, absoluteWeights,
                    model.bf16Weights, model.tokenizerPath);
  return std::move(*built);
}
