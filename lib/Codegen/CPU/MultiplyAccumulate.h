//===- MultiplyAccumulate.h - generics that add products -------*- C++ -*-===//

#ifndef GDN_LIB_CODEGEN_CPU_MULTIPLYACCUMULATE_H
#define GDN_LIB_CODEGEN_CPU_MULTIPLYACCUMULATE_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::gdn {

/// Whether the body of the two-input generic `op` is out + in0 * in1 (in
/// either order of each operation's operands).
inline bool isMultiplyAccumulate(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getNumArguments() != 3 || body.getOperations().size() != 3)
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value out = body.getArgument(2);
  if (add.getLhs() != out && add.getRhs() != out)
    return false;
  auto mul = (add.getLhs() == out ? add.getRhs() : add.getLhs())
                 .getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value a = body.getArgument(0), k = body.getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == k) ||
         (mul.getLhs() == k && mul.getRhs() == a);
}

} // namespace mlir::gdn

#endif // GDN_LIB_CODEGEN_CPU_MULTIPLYACCUMULATE_H
