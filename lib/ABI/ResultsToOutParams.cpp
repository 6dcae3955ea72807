//===- ResultsToOutParams.cpp - results as caller-allocated buffers -------===//

#include "gdn/ABI/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNRESULTSTOOUTPARAMSPASS
#include "gdn/ABI/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
constexpr StringLiteral kInternalSuffix = "_returning_buffers";

/// Drops the results of `func` that return one of its arguments updated in
/// place (after casts): that buffer is already the caller's, and an
/// out-parameter for it would only take a copy of it. A read-only argument
/// returned as it is keeps its out-parameter (a copy).
void dropArgumentResults(func::FuncOp func) {
  // The list stays for the passes after this one (gdn-gpu-merge-launches:
  // by the C ABI, such a buffer overlaps no other argument); out-parameters
  // come after the arguments, so their numbers hold.
  auto inPlace =
      func->getAttrOfType<DenseI64ArrayAttr>(kInPlaceArgumentsAttrName);
  // A private copy for internal callers keeps its results.
  if (!inPlace || !func.isPublic() || !func.getBody().hasOneBlock())
    return;
  auto returnOp = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  llvm::BitVector drop(func.getNumResults());
  for (OpOperand &operand : returnOp->getOpOperands()) {
    Value value = operand.get();
    while (auto cast = value.getDefiningOp<memref::CastOp>())
      value = cast.getSource();
    auto arg = dyn_cast<BlockArgument>(value);
    if (arg && arg.getOwner() == &func.getBody().front() &&
        llvm::is_contained(inPlace.asArrayRef(),
                           static_cast<int64_t>(arg.getArgNumber())))
      drop.set(operand.getOperandNumber());
  }
  if (drop.none())
    return;
  returnOp->eraseOperands(drop);
  (void)func.eraseResults(drop);
}

bool returnsBuffers(func::FuncOp func) {
  return llvm::any_of(func.getResultTypes(),
                      [](Type type) { return isa<BaseMemRefType>(type); });
}

struct GdnResultsToOutParamsPass
    : gdn::impl::GdnResultsToOutParamsPassBase<GdnResultsToOutParamsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // Internal callers of a public function keep its results as results,
    // through a private copy.
    SmallVector<func::FuncOp> publicFunctions;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal() && returnsBuffers(func))
        publicFunctions.push_back(func);
    for (func::FuncOp func : publicFunctions) {
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(func, module);
      if (!uses || uses->empty())
        continue;
      SmallVector<func::CallOp> calls;
      for (const SymbolTable::SymbolUse &use : *uses) {
        auto call = dyn_cast<func::CallOp>(use.getUser());
        if (!call) {
          use.getUser()->emitError()
              << "refers to '" << func.getName()
              << "', whose results become out-parameters of its C "
                 "interface; only func.call may use it inside the module";
          return signalPassFailure();
        }
        calls.push_back(call);
      }
      auto copy = cast<func::FuncOp>(func->clone());
      copy.setName((func.getName() + kInternalSuffix).str());
      copy.setPrivate();
      copy->removeAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName());
      // Internal callers make no promise about overlapping buffers.
      copy->removeAttr(kInPlaceArgumentsAttrName);
      // Renamed on a clash with an existing symbol.
      symbols.insert(copy, Block::iterator(func));
      for (func::CallOp call : calls)
        call.setCallee(copy.getName());
    }

    for (func::FuncOp func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        dropArgumentResults(func);

    bufferization::BufferResultsToOutParamsOpts options;
    options.hoistStaticAllocs = true;
    options.hoistDynamicAllocs = true;
    options.modifyPublicFunctions = true;
    options.filterFn = [](func::FuncOp *func) { return func->isPublic(); };
    if (failed(bufferization::promoteBufferResultsToOutParams(module,
                                                              options)))
      signalPassFailure();
  }
};
} // namespace
