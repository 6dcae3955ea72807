//===- ShapeContract.cpp - symbolic shape checks for verifiers ------------===//

#include "ShapeContract.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::gdn;

ShapeContract::ShapeContract(Operation *op, ArrayRef<StringRef> staticSymbols)
    : op(op) {
  for (StringRef symbol : staticSymbols)
    this->staticSymbols.insert(symbol);
}

int64_t ShapeContract::lookup(StringRef symbol) const {
  auto it = bindings.find(symbol);
  return it == bindings.end() ? ShapedType::kDynamic : it->second.size;
}

std::string ShapeContract::formatExpected(ArrayRef<StringRef> dims) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[" << llvm::join(dims, ", ") << "]";
  bool anyKnown = llvm::any_of(
      dims, [&](StringRef d) { return !ShapedType::isDynamic(lookup(d)); });
  if (!anyKnown)
    return text;
  os << " = [";
  llvm::interleaveComma(dims, os, [&](StringRef d) {
    int64_t size = lookup(d);
    if (ShapedType::isDynamic(size))
      os << "?";
    else
      os << size;
  });
  os << "]";
  return text;
}

LogicalResult ShapeContract::check(StringRef role, StringRef name, Type type,
                                   ArrayRef<StringRef> dims) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return op->emitOpError()
           << role << " '" << name << "' must be a ranked tensor of shape "
           << formatExpected(dims) << ", but got " << type;
  if (tensorType.getRank() != static_cast<int64_t>(dims.size()))
    return op->emitOpError()
           << role << " '" << name << "' must have rank " << dims.size()
           << " with shape " << formatExpected(dims) << ", but got " << type;

  for (auto [index, symbol] : llvm::enumerate(dims)) {
    int64_t actual = tensorType.getDimSize(index);
    if (ShapedType::isDynamic(actual) && staticSymbols.contains(symbol))
      return op->emitOpError()
             << role << " '" << name << "' must have a static " << symbol
             << " dimension (dimension " << index << " of "
             << formatExpected(dims) << "), but got " << type;
    if (ShapedType::isDynamic(actual))
      continue;
    if (actual < 1 && staticSymbols.contains(symbol))
      return op->emitOpError()
             << role << " '" << name << "' must have a positive " << symbol
             << " dimension (dimension " << index << " of "
             << formatExpected(dims) << "), but got " << type;
    auto it = bindings.find(symbol);
    if (it != bindings.end() && !ShapedType::isDynamic(it->second.size) &&
        it->second.size != actual)
      return op->emitOpError() << role << " '" << name << "' must have shape "
                               << formatExpected(dims) << " (" << symbol
                               << " = " << it->second.size << " from "
                               << it->second.source << "), but got " << type;
    if (it == bindings.end() || ShapedType::isDynamic(it->second.size))
      bindings[symbol] = {actual, (role + " '" + name + "'").str()};
  }
  return success();
}

Type mlir::gdn::getTensorElementType(Type type) {
  if (auto tensorType = dyn_cast<RankedTensorType>(type))
    return tensorType.getElementType();
  return {};
}

LogicalResult mlir::gdn::verifyRoomForNewRows(Operation *op,
                                              const ShapeContract &contract) {
  int64_t rows = contract.lookup("S"), tokens = contract.lookup("T");
  if (ShapedType::isDynamic(rows) || ShapedType::isDynamic(tokens) ||
      rows >= tokens)
    return success();
  return op->emitOpError() << "in_place_cache: the caches have " << rows
                           << " rows, fewer than the " << tokens
                           << " new tokens they must make room for";
}

LogicalResult mlir::gdn::verifyAttentionBlock(Operation *op,
                                              IntegerAttr block) {
  // A block's scores are [N, N] tiles of a task: larger ones only cost
  // memory and code.
  constexpr int64_t kMaxAttentionBlock = 1024;
  if (!block)
    return success();
  int64_t size = block.getInt();
  if (size >= 1 && size <= kMaxAttentionBlock)
    return success();
  return op->emitOpError() << "attention_block must be 1.."
                           << kMaxAttentionBlock << ", but got " << size;
}
