//===- FuzzSafetensorsIndex.cpp - libFuzzer target: shard indexes ---------===//
//
// Writes the input as model.safetensors.index.json into a folder of this
// process that holds two small valid shards, then opens the folder as a
// checkpoint's weights (WeightFiles::open: the index's JSON, the shard
// names it gives, every tensor in the shard the index says) and looks up
// what loads. No input may crash, hang, leak, overflow, or open a file
// outside the folder.
//
//===----------------------------------------------------------------------===//

#include "gdn/Frontend/WeightFiles.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

/// A safetensors file of f32 tensors of one element each.
std::string shard(std::initializer_list<const char *> names) {
  std::string header = "{";
  size_t offset = 0;
  for (const char *name : names) {
    if (header.size() > 1)
      header += ",";
    header += std::string("\"") + name +
              "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + 4) + "]}";
    offset += 4;
  }
  header += "}";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i)
    file[i] = static_cast<char>(header.size() >> (8 * i));
  return file + header + std::string(offset, '\0');
}

void writeFile(const std::string &path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    __builtin_trap();
  os << bytes;
}

/// The folder: two shards, a and b in the first, c in the second.
const std::string &folder() {
  // Never destroyed: the exit handler that removes the folder runs after
  // the destructors of statics made before it.
  static const std::string *dir = [] {
    auto *path = new std::string("/tmp/gdn-fuzz-safetensors_index-" +
                                 std::to_string(getpid()));
    llvm::sys::fs::create_directories(*path);
    writeFile(*path + "/model-00001-of-00002.safetensors", shard({"a", "b"}));
    writeFile(*path + "/model-00002-of-00002.safetensors", shard({"c"}));
    atexit([] { llvm::sys::fs::remove_directories(folder()); });
    return path;
  }();
  return *dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = folder();
  writeFile(dir + "/model.safetensors.index.json",
            llvm::StringRef(reinterpret_cast<const char *>(data), size));
  llvm::Expected<mlir::gdn::WeightFiles> weights =
      mlir::gdn::WeightFiles::open(dir);
  if (!weights) {
    llvm::consumeError(weights.takeError());
    return 0;
  }
  // What opens holds whole shards of the folder (those the index names),
  // each tensor from its own shard, nothing from elsewhere.
  const std::string shardOf[] = {dir + "/model-00001-of-00002.safetensors",
                                 dir + "/model-00001-of-00002.safetensors",
                                 dir + "/model-00002-of-00002.safetensors"};
  const char *const names[] = {"a", "b", "c"};
  size_t found = 0;
  for (int i = 0; i < 3; ++i) {
    if (!weights->find(names[i]))
      continue;
    ++found;
    if (weights->fileOf(names[i]) != shardOf[i])
      __builtin_trap();
  }
  if (found != weights->names().size() ||
      (weights->find("a") == nullptr) != (weights->find("b") == nullptr))
    __builtin_trap();
  return 0;
}
