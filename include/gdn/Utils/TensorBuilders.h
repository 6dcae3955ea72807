//===- TensorBuilders.h - small builders for linalg on tensors --*- C++ -*-===//
//
// Helpers shared by the gdn lowerings: empty and zero tensors with mixed
// static/dynamic sizes, float conversions, and linalg.generic with a body
// given as a lambda that returns the yielded value.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UTILS_TENSORBUILDERS_H
#define GDN_UTILS_TENSORBUILDERS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace mlir::gdn {

/// tensor.empty with the given sizes.
Value createEmpty(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Type elementType);

/// tensor.empty with the sizes of `like` (dynamic ones read with tensor.dim).
Value createEmptyLike(OpBuilder &b, Location loc, Value like, Type elementType);

/// A tensor of the given sizes filled with zeros by linalg.fill.
Value createZeros(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Type elementType);

/// Fills `init` with `value` (an f32 constant) by linalg.fill.
Value fillWith(OpBuilder &b, Location loc, Value init, float value);

/// Extends or truncates a float scalar to `to`; returns it when equal.
Value convertFloat(OpBuilder &b, Location loc, Value scalar, Type to);

/// Body of a linalg.generic: receives the block arguments (inputs, then the
/// output) and returns the value to yield.
using GenericBody = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// Builds a single-result linalg.generic and returns its result.
Value buildGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                   ArrayRef<AffineMap> maps,
                   ArrayRef<utils::IteratorType> iterators, GenericBody body);

/// Builds an all-parallel linalg.generic whose inputs and output use the
/// given maps over the output's iteration space.
Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                       Value init, ArrayRef<AffineMap> inputMaps,
                       GenericBody body);

/// Returns `values`, each tensor.cast to the matching type of `types` where
/// they differ (a lowering may know fewer static sizes than the op's
/// declared results, or more).
SmallVector<Value> castToTypes(OpBuilder &b, Location loc, ValueRange values,
                               TypeRange types);

/// Concatenates ranked tensors of equal rank along `dim` with
/// tensor.insert_slice into one tensor.empty (the form the CPU and CUDA
/// pipelines bufferize in place, without a tensor.concat decomposition).
Value concatAlong(OpBuilder &b, Location loc, ValueRange parts, int64_t dim);

/// The same concatenation written into `dest`, whose size along `dim` must be
/// the sum of the parts' (a destination the caller owns, such as a cache
/// buffer passed into a layer function).
Value concatInto(OpBuilder &b, Location loc, ValueRange parts, int64_t dim,
                 Value dest);

/// `part` written into `dest` at `offset` along `dim` (the other offsets
/// 0): a cache's new rows written into the room it has for them.
Value insertAlong(OpBuilder &b, Location loc, Value part, Value dest,
                  int64_t dim, OpFoldResult offset);

/// The sizes of `parts` concatenated along `dim`.
SmallVector<OpFoldResult> concatSizes(OpBuilder &b, Location loc,
                                      ValueRange parts, int64_t dim);

/// Converts every element of a ranked tensor to `elementType`.
Value convertTensor(OpBuilder &b, Location loc, Value x, Type elementType);

/// The indexing maps of a projection, out[b, t, o] += x[b, t, i] w[o, i]
/// over (b, t, o, i) with a PyTorch-layout weight [O, I]: what layer ops
/// decompose projections into (linalg.contract), and what target tiling
/// recognises (gdn-cpu-tile-projections).
ArrayAttr getProjectionIndexingMaps(MLIRContext *context);

} // namespace mlir::gdn

#endif // GDN_UTILS_TENSORBUILDERS_H
