//===- HoistLoopBuffers.cpp - scratch buffers out of sequential loops -----===//

#include "gdn/Codegen/CPU/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNHOISTLOOPBUFFERSPASS
#include "gdn/Codegen/CPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// Returns the dealloc of `alloc` in the same block, when the buffer is
/// confined to one iteration of the enclosing loop body.
memref::DeallocOp findIterationLocalDealloc(memref::AllocOp alloc) {
  memref::DeallocOp dealloc;
  for (Operation *user : alloc->getUsers()) {
    if (auto candidate = dyn_cast<memref::DeallocOp>(user)) {
      if (candidate->getBlock() != alloc->getBlock() || dealloc)
        return {};
      dealloc = candidate;
      continue;
    }
    // A yielded buffer outlives the iteration.
    if (isa<scf::YieldOp>(user) && user->getBlock() == alloc->getBlock())
      return {};
  }
  return dealloc;
}

/// Moves one alloc/dealloc pair out of its scf.for; returns true on change.
bool hoistOne(func::FuncOp func) {
  bool changed = false;
  func.walk([&](memref::AllocOp alloc) {
    if (changed || !alloc.getDynamicSizes().empty() ||
        !alloc.getSymbolOperands().empty())
      return;
    auto loop = dyn_cast<scf::ForOp>(alloc->getParentOp());
    if (!loop)
      return;
    memref::DeallocOp dealloc = findIterationLocalDealloc(alloc);
    if (!dealloc)
      return;
    alloc->moveBefore(loop);
    dealloc->moveAfter(loop);
    changed = true;
  });
  return changed;
}

struct GdnHoistLoopBuffersPass
    : gdn::impl::GdnHoistLoopBuffersPassBase<GdnHoistLoopBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    while (hoistOne(getOperation())) {
    }
  }
};
} // namespace
