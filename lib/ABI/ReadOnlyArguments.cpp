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
/// The argument attribute of a cache the function appends to in place.
constexpr StringLiteral kInPlace = "gdn.in_place";

struct GdnReadOnlyArgumentsPass
    : gdn::impl::GdnReadOnlyArgumentsPassBase<GdnReadOnlyArgumentsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.isPublic())
      return;
    StringRef writable = bufferization::BufferizationDialect::kWritableAttrName;
    SmallVector<int64_t> inPlaceArguments;
    for (BlockArgument arg : func.getArguments()) {
      if (!isa<TensorType>(arg.getType()))
        continue;
      unsigned index = arg.getArgNumber();
      bool inPlace = static_cast<bool>(func.getArgAttr(index, kInPlace));
      func.setArgAttr(index, writable, BoolAttr::get(&getContext(), inPlace));
      if (inPlace)
        inPlaceArguments.push_back(index);
      // The marker has done its job; left in place it reaches the LLVM
      // translation, which warns about every argument that carries it.
      func.removeArgAttr(index, kInPlace);
    }
    // Bufferization drops the argument attributes; the function keeps the
    // list for gdn-results-to-out-params, which gives a result that returns
    // one of these buffers no out-parameter.
    if (!inPlaceArguments.empty())
      func->setAttr(kInPlaceArgumentsAttrName,
                    DenseI64ArrayAttr::get(&getContext(), inPlaceArguments));
  }
};
} // namespace
