//===- Safetensors.cpp - memory-mapped safetensors files ------------------===//
//
// Format: an 8-byte little-endian header length N, N bytes of JSON mapping
// tensor names to {dtype, shape, data_offsets: [begin, end)} (offsets into
// the data section that follows), and the data.
//
//===----------------------------------------------------------------------===//

#include "gdn/Frontend/Safetensors.h"
#include "gdn/Frontend/StrictJSON.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

#include <algorithm>

using namespace mlir::gdn;
using llvm::Error;
using llvm::StringRef;
namespace json = llvm::json;

static Error fileError(StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

static int64_t elementBytes(StringRef dtype) {
  if (dtype == "F32")
    return 4;
  if (dtype == "BF16" || dtype == "F16")
    return 2;
  return 0;
}

llvm::Expected<SafetensorsFile> SafetensorsFile::open(StringRef path) {
  // Only a regular file has a size to check the header against: a device
  // or a FIFO would be read until its end, which may never come.
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return fileError(path, "cannot read: " + ec.message());
  if (!llvm::sys::fs::is_regular_file(status))
    return fileError(path, "not a regular file");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fileError(path, "cannot read: " + buffer.getError().message());
  return fromBuffer(path, std::move(*buffer));
}

llvm::Expected<SafetensorsFile>
SafetensorsFile::fromBuffer(StringRef path,
                            std::unique_ptr<llvm::MemoryBuffer> buffer) {
  SafetensorsFile file;
  file.filePath = path.str();
  file.buffer = std::move(buffer);
  StringRef bytes = file.buffer->getBuffer();
  if (bytes.size() < 8)
    return fileError(path, "truncated: " + llvm::Twine(bytes.size()) +
                               " bytes, shorter than the 8-byte header "
                               "length");
  uint64_t headerSize =
      llvm::support::endian::read64le(bytes.data());
  if (headerSize > bytes.size() - 8)
    return fileError(path, "the header length " + llvm::Twine(headerSize) +
                               " runs past the end of the file (" +
                               llvm::Twine(bytes.size()) + " bytes)");
  StringRef header = bytes.substr(8, headerSize);
  StringRef data = bytes.substr(8 + headerSize);
  llvm::Expected<json::Value> parsed = parseStrictJSON(header);
  if (!parsed)
    return fileError(path, "the header is not valid JSON: " +
                               llvm::toString(parsed.takeError()));
  const json::Object *entries = parsed->getAsObject();
  if (!entries)
    return fileError(path, "the header is not a JSON object");

  struct Extent {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Extent> extents;
  for (const auto &entry : *entries) {
    std::string name = entry.first.str();
    if (name == "__metadata__")
      continue;
    auto tensorError = [&](const llvm::Twine &message) {
      return fileError(path, "tensor '" + name + "': " + message);
    };
    const json::Object *info = entry.second.getAsObject();
    if (!info)
      return tensorError("the header entry is not an object");
    for (const auto &field : *info)
      if (!llvm::is_contained({"dtype", "shape", "data_offsets"},
                              field.first.str()))
        return tensorError("unknown entry field '" + field.first.str() +
                           "' (dtype, shape, data_offsets)");
    std::optional<StringRef> dtype = info->getString("dtype");
    int64_t itemBytes = dtype ? elementBytes(*dtype) : 0;
    if (!itemBytes)
      return tensorError("unsupported dtype " +
                         (dtype ? "'" + dtype->str() + "'"
                                : std::string("(missing)")) +
                         " (F32, BF16 or F16)");
    const json::Array *shapeList = info->getArray("shape");
    if (!shapeList)
      return tensorError("'shape' must be a list of sizes");
    SafetensorsTensor tensor;
    tensor.dtype = dtype->str();
    int64_t elements = 1, bytesNeeded = itemBytes;
    for (const json::Value &size : *shapeList) {
      std::optional<int64_t> n = size.getAsInteger();
      if (!n || *n < 0)
        return tensorError("'shape' must be a list of sizes >= 0");
      tensor.shape.push_back(*n);
      if (__builtin_mul_overflow(elements, *n, &elements) ||
          __builtin_mul_overflow(elements, itemBytes, &bytesNeeded))
        return tensorError("'shape' has more elements than a file can hold");
    }
    const json::Array *offsets = info->getArray("data_offsets");
    std::optional<int64_t> begin, end;
    if (offsets && offsets->size() == 2) {
      begin = (*offsets)[0].getAsInteger();
      end = (*offsets)[1].getAsInteger();
    }
    if (!begin || !end || *begin < 0 || *end < *begin)
      return tensorError("'data_offsets' must be [begin, end] with 0 <= "
                         "begin <= end");
    if (*end - *begin != bytesNeeded)
      return tensorError("'data_offsets' cover " +
                         llvm::Twine(*end - *begin) + " bytes, but shape and "
                         "dtype need " + llvm::Twine(bytesNeeded));
    if (static_cast<uint64_t>(*end) > data.size())
      return tensorError("data ends at byte " + llvm::Twine(*end) +
                         " of the data section, which has only " +
                         llvm::Twine(data.size()) +
                         " bytes (truncated file?)");
    tensor.bytes = llvm::ArrayRef<char>(data.data() + *begin, *end - *begin);
    extents.push_back({static_cast<uint64_t>(*begin),
                       static_cast<uint64_t>(*end), name});
    file.tensorMap[name] = std::move(tensor);
  }
  // Tensors may not share bytes: a header that lies about offsets. A
  // tensor of no elements holds no bytes, wherever its offset.
  llvm::erase_if(extents, [](const Extent &e) { return e.begin == e.end; });
  std::sort(extents.begin(), extents.end(),
            [](const Extent &a, const Extent &b) { return a.begin < b.begin; });
  for (size_t i = 1; i < extents.size(); ++i)
    if (extents[i].begin < extents[i - 1].end)
      return fileError(path, "tensors '" + extents[i - 1].name + "' and '" +
                                 extents[i].name +
                                 "' overlap in the data section");
  // The format indexes the whole data section: bytes after the last tensor
  // are a truncated header or a different file.
  // Sorted and non-overlapping, the extents end in order too.
  uint64_t used = extents.empty() ? 0 : extents.back().end;
  if (used < data.size())
    return fileError(path, llvm::Twine(data.size() - used) +
                               " bytes after the last tensor's data (the "
                               "header indexes " + llvm::Twine(used) +
                               " of " + llvm::Twine(data.size()) + ")");
  return std::move(file);
}
