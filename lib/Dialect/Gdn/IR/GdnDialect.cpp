//===- GdnDialect.cpp - gdn dialect registration --------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"

using namespace mlir;
using namespace mlir::gdn;

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "gdn/Dialect/Gdn/IR/GdnOpsDialect.cpp.inc"
#include "gdn/Dialect/Gdn/IR/GdnEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnAttrs.cpp.inc"

void GdnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "gdn/Dialect/Gdn/IR/GdnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "gdn/Dialect/Gdn/IR/GdnOps.cpp.inc"
      >();
}
