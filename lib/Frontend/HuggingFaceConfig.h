//===- HuggingFaceConfig.h - config.json of Qwen GDN hybrids ----*- C++ -*-===//

#ifndef GDN_LIB_FRONTEND_HUGGINGFACECONFIG_H
#define GDN_LIB_FRONTEND_HUGGINGFACECONFIG_H

#include "gdn/Frontend/ModelConfig.h"

#include "llvm/Support/JSON.h"

namespace mlir::gdn {

/// A Hugging Face config.json names its model_type; gdn's description
/// does not.
bool isHuggingFaceConfig(const llvm::json::Object &root);

/// The text model of a qwen3_5_text, qwen3_5 or dense qwen3_next
/// config.json; anything else is refused, the field named.
llvm::Expected<ModelConfig> parseHuggingFaceConfig(const llvm::json::Object &root);

} // namespace mlir::gdn

#endif // GDN_LIB_FRONTEND_HUGGINGFACECONFIG_H
