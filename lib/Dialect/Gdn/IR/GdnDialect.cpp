//===- GdnDialect.cpp - gdn dialect registration --------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"

using namespace mlir;
using namespace mlir::gdn;

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

#include "gdn/Dialect/Gdn/IR/GdnOpsDialect.cpp.inc"
#include "gdn/Dialect/Gdn/IR/GdnEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnAttrs.cpp.inc"

namespace {
/// gdn ops have no regions and refer to nothing outside their operands, so a
/// call of a function made of them (a model's layer) can be inlined.
struct GdnInlinerInterface : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;

  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void GdnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "gdn/Dialect/Gdn/IR/GdnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "gdn/Dialect/Gdn/IR/GdnOps.cpp.inc"
      >();
  addInterfaces<GdnInlinerInterface>();
}
