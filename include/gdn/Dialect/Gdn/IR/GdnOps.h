//===- GdnOps.h - gdn dialect operations ------------------------*- C++ -*-===//

#ifndef GDN_DIALECT_GDN_IR_GDNOPS_H
#define GDN_DIALECT_GDN_IR_GDNOPS_H

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "gdn/Dialect/Gdn/IR/GdnEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnAttrs.h.inc"

#define GET_OP_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnOps.h.inc"

namespace mlir::gdn {
/// Checks the `strategy` of `op`, if any, against its operands: 16-bit q, k
/// and v, K a multiple of 16, V a multiple of the value tiles.
LogicalResult verifyScanStrategy(DeltaRuleOp op);
} // namespace mlir::gdn

#endif // GDN_DIALECT_GDN_IR_GDNOPS_H
