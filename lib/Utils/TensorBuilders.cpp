//===- TensorBuilders.cpp - small builders for linalg on tensors ----------===//

#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::gdn;

Value mlir::gdn::createEmpty(OpBuilder &b, Location loc,
                             ArrayRef<OpFoldResult> sizes, Type elementType) {
  return tensor::EmptyOp::create(b, loc, sizes, elementType);
}

Value mlir::gdn::createEmptyLike(OpBuilder &b, Location loc, Value like,
                                 Type elementType) {
  return createEmpty(b, loc, tensor::getMixedSizes(b, loc, like), elementType);
}

Value mlir::gdn::fillWith(OpBuilder &b, Location loc, Value init, float value) {
  Type elementType = cast<RankedTensorType>(init.getType()).getElementType();
  Value constant = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(elementType, static_cast<double>(value)));
  return linalg::FillOp::create(b, loc, ValueRange{constant}, ValueRange{init})
      .getResult(0);
}

Value mlir::gdn::createZeros(OpBuilder &b, Location loc,
                             ArrayRef<OpFoldResult> sizes, Type elementType) {
  return fillWith(b, loc, createEmpty(b, loc, sizes, elementType), 0.0f);
}

Value mlir::gdn::convertFloat(OpBuilder &b, Location loc, Value scalar,
                              Type to) {
  Type from = scalar.getType();
  if (from == to)
    return scalar;
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, to, scalar);
  return arith::TruncFOp::create(b, loc, to, scalar);
}

Value mlir::gdn::buildGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                              Value init, ArrayRef<AffineMap> maps,
                              ArrayRef<utils::IteratorType> iterators,
                              GenericBody body) {
  return linalg::GenericOp::create(
             b, loc, init.getType(), inputs, ValueRange{init}, maps, iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, body(nb, nl, args));
             })
      .getResult(0);
}

Value mlir::gdn::buildElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                                  Value init, ArrayRef<AffineMap> inputMaps,
                                  GenericBody body) {
  int64_t rank = cast<RankedTensorType>(init.getType()).getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return buildGeneric(b, loc, inputs, init, maps, iterators, body);
}

Value mlir::gdn::convertTensor(OpBuilder &b, Location loc, Value x,
                               Type elementType) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getElementType() == elementType)
    return x;
  Value init = createEmptyLike(b, loc, x, elementType);
  return buildElementwise(b, loc, x, init,
                          b.getMultiDimIdentityMap(type.getRank()),
                          [&](OpBuilder &nb, Location nl, ValueRange args) {
                            return convertFloat(nb, nl, args[0], elementType);
                          });
}

SmallVector<Value> mlir::gdn::castToTypes(OpBuilder &b, Location loc,
                                          ValueRange values, TypeRange types) {
  SmallVector<Value> cast;
  for (auto [value, type] : llvm::zip_equal(values, types))
    cast.push_back(
        value.getType() == type
            ? value
            : tensor::CastOp::create(b, loc, type, value).getResult());
  return cast;
}

SmallVector<OpFoldResult> mlir::gdn::concatSizes(OpBuilder &b, Location loc,
                                                 ValueRange parts,
                                                 int64_t dim) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, parts[0]);
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  OpFoldResult total = b.getIndexAttr(0);
  for (Value part : parts)
    total = affine::makeComposedFoldedAffineApply(
        b, loc, s0 + s1, {total, tensor::getMixedSize(b, loc, part, dim)});
  sizes[dim] = total;
  return sizes;
}

Value mlir::gdn::concatInto(OpBuilder &b, Location loc, ValueRange parts,
                            int64_t dim, Value dest) {
  int64_t rank = cast<RankedTensorType>(dest.getType()).getRank();
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  OpFoldResult offset = b.getIndexAttr(0);
  SmallVector<OpFoldResult> unit(rank, b.getIndexAttr(1));
  Value result = dest;
  for (Value part : parts) {
    SmallVector<OpFoldResult> partOffsets(rank, b.getIndexAttr(0));
    partOffsets[dim] = offset;
    result = tensor::InsertSliceOp::create(b, loc, part, result, partOffsets,
                                           tensor::getMixedSizes(b, loc, part),
                                           unit);
    offset = affine::makeComposedFoldedAffineApply(
        b, loc, s0 + s1, {offset, tensor::getMixedSize(b, loc, part, dim)});
  }
  return result;
}

Value mlir::gdn::insertAlong(OpBuilder &b, Location loc, Value part, Value dest,
                             int64_t dim, OpFoldResult offset) {
  int64_t rank = cast<RankedTensorType>(dest.getType()).getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets[dim] = offset;
  SmallVector<OpFoldResult> unit(rank, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(
      b, loc, part, dest, offsets, tensor::getMixedSizes(b, loc, part), unit);
}

Value mlir::gdn::concatAlong(OpBuilder &b, Location loc, ValueRange parts,
                             int64_t dim) {
  auto firstType = cast<RankedTensorType>(parts.front().getType());
  Value dest = createEmpty(b, loc, concatSizes(b, loc, parts, dim),
                           firstType.getElementType());
  return concatInto(b, loc, parts, dim, dest);
}

ArrayAttr mlir::gdn::getProjectionIndexingMaps(MLIRContext *context) {
  AffineExpr batch, token, output, input;
  bindDims(context, batch, token, output, input);
  auto map = [&](ArrayRef<AffineExpr> results) -> Attribute {
    return AffineMapAttr::get(AffineMap::get(4, 0, results, context));
  };
  return ArrayAttr::get(context,
                        {map({batch, token, input}), map({output, input}),
                         map({batch, token, output})});
}
