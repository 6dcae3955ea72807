//===- WeightFiles.h - a model's weights in one or more files ---*- C++ -*-===//
//
// The weights of a model: one safetensors file (gdn's model description), or
// a Hugging Face checkpoint folder whose weights are one model.safetensors
// or shards listed by model.safetensors.index.json. Every file is mapped,
// not read; tensors are found by name across the files.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_FRONTEND_WEIGHTFILES_H
#define GDN_FRONTEND_WEIGHTFILES_H

#include "gdn/Frontend/Safetensors.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::gdn {

class WeightFiles {
public:
  /// `path` is a .safetensors file, an index (.json whose "weight_map"
  /// names the shard of every tensor, shards beside it), or a directory
  /// holding model.safetensors.index.json or model.safetensors. Errors name
  /// the file and, for an index, the tensor or shard.
  static llvm::Expected<WeightFiles> open(llvm::StringRef path);

  /// Whether `open` would find weights at `path` (a file, or a folder with
  /// model.safetensors or its shard index); says nothing of their validity.
  static bool existAt(llvm::StringRef path);

  /// One file already in memory (fuzzers and tests).
  static WeightFiles fromFile(SafetensorsFile file);

  /// What was opened, for messages.
  llvm::StringRef path() const { return openedPath; }

  /// The tensor `name`, or null.
  const SafetensorsTensor *find(llvm::StringRef name) const;
  /// The file that holds `name` (which must exist).
  llvm::StringRef fileOf(llvm::StringRef name) const;

  /// Every tensor's name, in no particular order.
  std::vector<llvm::StringRef> names() const;
  const std::vector<SafetensorsFile> &files() const { return shards; }

private:
  struct Location {
    unsigned file;
    const SafetensorsTensor *tensor;
  };
  /// Indexes the tensors of every shard; once the shards stop moving, as
  /// the index points into their maps.
  void buildIndex();

  std::string openedPath;
  std::vector<SafetensorsFile> shards;
  llvm::StringMap<Location> index;
};

/// Checks that `weights` hold the weights of `config` with their shapes, in
/// f32 or bf16, and nothing else but the tensors the configuration says to
/// ignore (ModelConfig::ignoredWeightPrefixes); the error names the tensor
/// and its file.
llvm::Error validateWeights(const ModelConfig &config,
                            const WeightFiles &weights);

/// The tensors of `weights` that `config` ignores, grouped by their prefix
/// ("visual.": 12 tensors), for summaries.
std::vector<std::pair<std::string, int64_t>>
ignoredWeights(const ModelConfig &config, const WeightFiles &weights);

} // namespace mlir::gdn

#endif // GDN_FRONTEND_WEIGHTFILES_H
