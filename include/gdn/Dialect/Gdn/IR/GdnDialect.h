//===- GdnDialect.h - gdn dialect -------------------------------*- C++ -*-===//

#ifndef GDN_DIALECT_GDN_IR_GDNDIALECT_H
#define GDN_DIALECT_GDN_IR_GDNDIALECT_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "gdn/Dialect/Gdn/IR/GdnOpsDialect.h.inc"

#endif // GDN_DIALECT_GDN_IR_GDNDIALECT_H
