//===- Safetensors.h - memory-mapped safetensors files ----------*- C++ -*-===//

#ifndef GDN_FRONTEND_SAFETENSORS_H
#define GDN_FRONTEND_SAFETENSORS_H

#include "gdn/Frontend/ModelConfig.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace mlir::gdn {

/// One tensor of a safetensors file: its dtype name ("F32", "BF16"), shape
/// and bytes (inside the mapped file).
struct SafetensorsTensor {
  std::string dtype;
  llvm::SmallVector<int64_t> shape;
  llvm::ArrayRef<char> bytes;
};

/// A safetensors file mapped into memory, its header validated: dtypes,
/// shapes, and data offsets that tile the data section exactly.
class SafetensorsFile {
public:
  static llvm::Expected<SafetensorsFile> open(llvm::StringRef path);

  /// The same checks on bytes already in memory; `path` names them in
  /// errors (the fuzzer and tests use it).
  static llvm::Expected<SafetensorsFile>
  fromBuffer(llvm::StringRef path, std::unique_ptr<llvm::MemoryBuffer> buffer);

  const llvm::StringMap<SafetensorsTensor> &tensors() const {
    return tensorMap;
  }
  llvm::StringRef path() const { return filePath; }

private:
  std::string filePath;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  llvm::StringMap<SafetensorsTensor> tensorMap;
};

} // namespace mlir::gdn

#endif // GDN_FRONTEND_SAFETENSORS_H
