//===- GdnDialect.cpp - gdn dialect registration --------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"

using namespace mlir;
using namespace mlir::gdn;

#include "gdn/Dialect/Gdn/IR/GdnOpsDialect.cpp.inc"

void GdnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gdn/Dialect/Gdn/IR/GdnOps.cpp.inc"
      >();
}
