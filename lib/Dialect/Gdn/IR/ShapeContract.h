//===- ShapeContract.h - symbolic shape checks for verifiers ----*- C++ -*-===//
//
// The gdn ops relate many operands through shared symbolic dimensions
// ([B, T, H, K], [B, T, Hv, V], ...). ShapeContract checks each operand and
// result against such a pattern and reports mismatches with the operand name,
// the expected shape and the actual type.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_DIALECT_GDN_IR_SHAPECONTRACT_H
#define GDN_LIB_DIALECT_GDN_IR_SHAPECONTRACT_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::gdn {

/// Binds symbolic dimension names to sizes while the operands of one op are
/// checked in order; the first static size seen for a symbol wins.
class ShapeContract {
public:
  /// `staticSymbols` names the dimensions that must be static everywhere.
  ShapeContract(Operation *op, ArrayRef<StringRef> staticSymbols);

  /// Checks that `type` is a ranked tensor with one dimension per entry of
  /// `dims` and that every dimension agrees with earlier bindings. `role` is
  /// "operand" or "result"; `name` is the ODS name.
  LogicalResult check(StringRef role, StringRef name, Type type,
                      ArrayRef<StringRef> dims);

  /// Returns the size bound to `symbol`, or ShapedType::kDynamic.
  int64_t lookup(StringRef symbol) const;

private:
  struct Binding {
    int64_t size;
    std::string source;
  };

  std::string formatExpected(ArrayRef<StringRef> dims) const;

  Operation *op;
  llvm::StringSet<> staticSymbols;
  llvm::StringMap<Binding> bindings;
};

/// Returns the element type of a ranked tensor type, or null.
Type getTensorElementType(Type type);

/// A float attribute that must be a positive, finite number (an epsilon, a
/// RoPE base).
LogicalResult verifyPositiveFinite(Operation *op, StringRef name, float value);

/// Integer attributes of sizes: at most `maximum`.
LogicalResult verifySizeAttrs(Operation *op,
                              ArrayRef<std::pair<StringRef, int64_t>> sizes,
                              int64_t maximum);

/// Weight matrices (projections, embedding tables, LM heads) may be f32 or
/// bf16: bf16 ones are widened where they are read.
bool isWeightMatrixElementType(Type type);
LogicalResult
verifyWeightMatrices(Operation *op,
                     ArrayRef<std::pair<StringRef, Value>> values);

/// An `attention_block` attribute, where there is one: 1 to 1024 queries.
LogicalResult verifyAttentionBlock(Operation *op, IntegerAttr block);

/// A cache written in place ("S" rows: the cached ones, then room for the
/// "T" new ones) must have at least T rows where both are static.
LogicalResult verifyRoomForNewRows(Operation *op,
                                   const ShapeContract &contract);

/// All of `values` must be f32 tensors; the error names the first that is
/// not.
LogicalResult verifyF32(Operation *op,
                        ArrayRef<std::pair<StringRef, Value>> values);

} // namespace mlir::gdn

#endif // GDN_LIB_DIALECT_GDN_IR_SHAPECONTRACT_H
