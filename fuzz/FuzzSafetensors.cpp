//===- FuzzSafetensors.cpp - libFuzzer target: safetensors files ----------===//
//
// Feeds arbitrary bytes to the safetensors reader (header length, JSON
// header, tensor entries, offsets against the data section) and validates
// what loads against a small fixed model description, so that the shape
// and dtype checks run too. No input may crash, hang, leak or overflow.
//
//===----------------------------------------------------------------------===//

#include "gdn/Frontend/ModelConfig.h"
#include "gdn/Frontend/WeightFiles.h"

#include <cstddef>
#include <cstdint>

static const char *kDescription = R"({
  "vocab_size": 8, "d_model": 4, "num_layers": 2,
  "layer_types": ["gdn", "mla"],
  "gdn": {"num_heads": 1, "head_dim": 4, "conv_size": 2},
  "mla": {"num_heads": 1, "q_lora_rank": 0, "kv_lora_rank": 2,
          "qk_nope_head_dim": 2, "qk_rope_head_dim": 2, "v_head_dim": 2,
          "rope_theta": 10000.0},
  "mlp_hidden_size": 4, "norm_eps": 1e-6, "tie_embeddings": true,
  "max_context": 16, "tokenizer": "ids"})";

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static llvm::Expected<mlir::gdn::ModelConfig> config =
      mlir::gdn::parseModelConfig(kDescription);
  if (!config)
    __builtin_trap();
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "input.safetensors");
  llvm::Expected<mlir::gdn::SafetensorsFile> file =
      mlir::gdn::SafetensorsFile::fromBuffer("input.safetensors",
                                             std::move(buffer));
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  if (llvm::Error error = mlir::gdn::validateWeights(
          *config, mlir::gdn::WeightFiles::fromFile(std::move(*file))))
    llvm::consumeError(std::move(error));
  return 0;
}
