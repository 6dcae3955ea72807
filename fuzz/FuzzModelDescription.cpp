//===- FuzzModelDescription.cpp - libFuzzer target: model.json ------------===//
//
// Feeds arbitrary bytes to the model-description parser and, for what
// parses, computes the expected weight shapes: no input may crash, hang,
// leak or overflow (built with ASan and UBSan).
//
//===----------------------------------------------------------------------===//

#include "gdn/Frontend/ModelConfig.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<mlir::gdn::ModelConfig> config =
      mlir::gdn::parseModelConfig(text);
  if (!config) {
    llvm::consumeError(config.takeError());
    return 0;
  }
  (void)mlir::gdn::expectedWeightShapes(*config);
  return 0;
}
