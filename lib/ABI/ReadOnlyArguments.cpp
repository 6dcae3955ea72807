//===- ReadOnlyArguments.cpp - value semantics at function boundaries -----===//

#include "gdn/ABI/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNREADONLYARGUMENTSPASS
#include "gdn/ABI/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
struct GdnReadOnlyArgumentsPass
    : gdn::impl::GdnReadOnlyArgumentsPassBase<GdnReadOnlyArgumentsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.isPublic())
      return;
    auto readOnly = BoolAttr::get(&getContext(), false);
    for (BlockArgument arg : func.getArguments())
      if (isa<TensorType>(arg.getType()))
        func.setArgAttr(arg.getArgNumber(),
                        bufferization::BufferizationDialect::kWritableAttrName,
                        readOnly);
  }
};
} // namespace
