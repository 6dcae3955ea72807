//===- WeightFiles.cpp - a model's weights in one or more files -----------===//

#include "gdn/Frontend/WeightFiles.h"
#include "gdn/Frontend/StrictJSON.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <map>
#include <optional>

using namespace mlir::gdn;
using llvm::Error;
using llvm::StringRef;
namespace json = llvm::json;

static Error pathError(StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

static std::string joinPath(StringRef directory, StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

WeightFiles WeightFiles::fromFile(SafetensorsFile file) {
  WeightFiles weights;
  weights.openedPath = file.path().str();
  weights.shards.push_back(std::move(file));
  weights.buildIndex();
  return weights;
}

void WeightFiles::buildIndex() {
  for (auto [i, file] : llvm::enumerate(shards))
    for (const auto &entry : file.tensors())
      index[entry.first()] = {static_cast<unsigned>(i), &entry.second};
}

/// Opens the shards an index names; every tensor must be in the shard the
/// index gives, and every tensor of a shard in the index.
static Error openIndex(StringRef indexPath, std::vector<SafetensorsFile> &out) {
  std::map<std::string, std::string> shardOf;
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(indexPath, status))
    return pathError(indexPath, "cannot read: " + ec.message());
  if (!llvm::sys::fs::is_regular_file(status))
    return pathError(indexPath, "not a regular file");
  auto buffer = llvm::MemoryBuffer::getFile(indexPath, /*IsText=*/true);
  if (!buffer)
    return pathError(indexPath, "cannot read: " + buffer.getError().message());
  llvm::Expected<json::Value> parsed = parseStrictJSON((*buffer)->getBuffer());
  if (!parsed)
    return pathError(indexPath,
                     "not valid JSON: " + llvm::toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  const json::Object *map = root ? root->getObject("weight_map") : nullptr;
  if (!map)
    return pathError(indexPath, "weight_map: missing or not an object of "
                                "tensor name -> shard file");
  StringRef directory = llvm::sys::path::parent_path(indexPath);
  std::map<std::string, unsigned> openedShards;
  for (const auto &entry : *map) {
    std::optional<StringRef> shard = entry.second.getAsString();
    std::string field = "weight_map[\"" + entry.first.str() + "\"]";
    if (!shard)
      return pathError(indexPath, field + ": expected a file name");
    // A shard is a file beside the index, never elsewhere.
    if (shard->empty() || shard->contains('/') || *shard == "." ||
        *shard == "..")
      return pathError(indexPath, field + ": \"" + *shard +
                                      "\" is not a file name beside the "
                                      "index");
    shardOf[entry.first.str()] = shard->str();
    if (openedShards.count(shard->str()))
      continue;
    std::string shardPath = joinPath(directory, *shard);
    llvm::Expected<SafetensorsFile> file = SafetensorsFile::open(shardPath);
    if (!file)
      return pathError(indexPath, "shard of tensor '" + entry.first.str() +
                                      "': " +
                                      llvm::toString(file.takeError()));
    openedShards[shard->str()] = out.size();
    out.push_back(std::move(*file));
  }
  for (const auto &[name, shard] : shardOf) {
    const SafetensorsFile &file = out[openedShards.at(shard)];
    if (!file.tensors().count(name))
      return pathError(indexPath, "weight_map names tensor '" + name +
                                      "' in " + shard +
                                      ", which does not hold it");
  }
  for (const SafetensorsFile &file : out)
    for (const auto &entry : file.tensors()) {
      auto it = shardOf.find(entry.first().str());
      if (it == shardOf.end())
        return pathError(file.path(), "tensor '" + entry.first() +
                                          "' is not in the index " +
                                          indexPath);
      if (joinPath(directory, it->second) != file.path())
        return pathError(file.path(), "tensor '" + entry.first() +
                                          "' is also in " + it->second +
                                          ", where the index puts it");
    }
  return Error::success();
}

/// The weights file of a checkpoint folder: its shard index, else its one
/// model.safetensors; nothing if it has neither.
static std::optional<std::string> weightsFileIn(StringRef directory) {
  for (StringRef name : {"model.safetensors.index.json", "model.safetensors"}) {
    std::string path = joinPath(directory, name);
    if (llvm::sys::fs::exists(path))
      return path;
  }
  return std::nullopt;
}

bool WeightFiles::existAt(StringRef path) {
  return llvm::sys::fs::is_directory(path) ? weightsFileIn(path).has_value()
                                           : llvm::sys::fs::exists(path);
}

llvm::Expected<WeightFiles> WeightFiles::open(StringRef path) {
  WeightFiles weights;
  weights.openedPath = path.str();
  std::string resolved;
  if (llvm::sys::fs::is_directory(path)) {
    std::optional<std::string> file = weightsFileIn(path);
    if (!file)
      return pathError(path, "holds neither model.safetensors nor "
                             "model.safetensors.index.json");
    resolved = *file;
    path = weights.openedPath = resolved;
  }
  if (path.ends_with(".json")) {
    if (Error error = openIndex(path, weights.shards))
      return std::move(error);
  } else {
    llvm::Expected<SafetensorsFile> file = SafetensorsFile::open(path);
    if (!file)
      return file.takeError();
    weights.shards.push_back(std::move(*file));
  }
  weights.buildIndex();
  return std::move(weights);
}

const SafetensorsTensor *WeightFiles::find(StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second.tensor;
}

StringRef WeightFiles::fileOf(StringRef name) const {
  return shards[index.find(name)->second.file].path();
}

std::vector<StringRef> WeightFiles::names() const {
  std::vector<StringRef> result;
  for (const auto &entry : index)
    result.push_back(entry.first());
  return result;
}

static std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  std::string out = "[";
  for (auto [i, size] : llvm::enumerate(shape))
    out += (i ? ", " : "") + std::to_string(size);
  return out + "]";
}

static std::optional<std::string> ignoredPrefix(const ModelConfig &config,
                                                StringRef name) {
  for (const std::string &prefix : config.ignoredWeightPrefixes)
    if (name.starts_with(prefix))
      return prefix;
  return std::nullopt;
}

Error mlir::gdn::validateWeights(const ModelConfig &config,
                                 const WeightFiles &weights) {
  auto expected = expectedWeightShapes(config);
  for (const auto &[name, shape] : expected) {
    const SafetensorsTensor *tensor = weights.find(name);
    if (!tensor)
      return pathError(weights.path(), "missing tensor '" + name +
                                           "' (shape " + shapeText(shape) +
                                           ")");
    StringRef file = weights.fileOf(name);
    if (tensor->dtype != "F32" && tensor->dtype != "BF16")
      return pathError(file, "tensor '" + name + "' has dtype " +
                                 tensor->dtype +
                                 "; model weights must be F32 or BF16");
    if (llvm::ArrayRef<int64_t>(tensor->shape) !=
        llvm::ArrayRef<int64_t>(shape))
      return pathError(file, "tensor '" + name + "' must have shape " +
                                 shapeText(shape) + ", but has " +
                                 shapeText(tensor->shape));
  }
  // Sorted, so that the first unexpected tensor is the same every time.
  std::vector<StringRef> names = weights.names();
  llvm::sort(names);
  for (StringRef name : names)
    if (!expected.count(name.str()) && !ignoredPrefix(config, name))
      return pathError(weights.fileOf(name),
                       "unexpected tensor '" + name +
                           "' (not a weight of this model)");
  return Error::success();
}

std::vector<std::pair<std::string, int64_t>>
mlir::gdn::ignoredWeights(const ModelConfig &config,
                          const WeightFiles &weights) {
  std::map<std::string, int64_t> counts;
  for (StringRef name : weights.names())
    if (std::optional<std::string> prefix = ignoredPrefix(config, name))
      ++counts[*prefix];
  return {counts.begin(), counts.end()};
}
