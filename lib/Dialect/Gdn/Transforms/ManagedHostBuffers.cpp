//===- ManagedHostBuffers.cpp - host buffers that kernels can reach -------===//
//
// A CUDA executable's @main makes its tensors on the host (constants,
// results of the functions it calls) and prints them there, while the
// kernels it launches read and write the same buffers. Managed memory is
// reachable from both sides, so every host buffer becomes a host_shared
// gpu.alloc: memref.alloc directly, and a constant (memref.get_global) as a
// managed copy made on first use in its function.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNMANAGEDHOSTBUFFERSPASS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
gpu::AllocOp createManaged(PatternRewriter &rewriter, Location loc,
                           MemRefType type, ValueRange dynamicSizes,
                           ValueRange symbolOperands) {
  return gpu::AllocOp::create(rewriter, loc, type, /*asyncToken=*/Type(),
                              /*asyncDependencies=*/ValueRange(), dynamicSizes,
                              symbolOperands,
                              /*hostShared=*/true);
}

struct AllocToManaged : OpRewritePattern<memref::AllocOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::AllocOp alloc,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(alloc,
                       createManaged(rewriter, alloc.getLoc(), alloc.getType(),
                                     alloc.getDynamicSizes(),
                                     alloc.getSymbolOperands()));
    return success();
  }
};

struct DeallocToManaged : OpRewritePattern<memref::DeallocOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::DeallocOp dealloc,
                                PatternRewriter &rewriter) const override {
    auto alloc = dealloc.getMemref().getDefiningOp<gpu::AllocOp>();
    if (!alloc || !alloc.getHostShared())
      return rewriter.notifyMatchFailure(dealloc, "not a managed buffer");
    rewriter.replaceOpWithNewOp<gpu::DeallocOp>(
        dealloc, /*asyncToken=*/Type(), ValueRange(), dealloc.getMemref());
    return success();
  }
};

/// Constants are read-only, so one managed copy serves every use; it lives
/// until the process ends, like the global it copies.
struct GlobalToManaged : OpRewritePattern<memref::GetGlobalOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::GetGlobalOp global,
                                PatternRewriter &rewriter) const override {
    bool onlyCopiedFrom = llvm::all_of(global->getUsers(), [&](Operation *u) {
      auto copy = dyn_cast<memref::CopyOp>(u);
      return copy && copy.getSource() == global.getResult() &&
             copy.getTarget().getDefiningOp<gpu::AllocOp>();
    });
    if (onlyCopiedFrom)
      return rewriter.notifyMatchFailure(global, "already copied");
    rewriter.setInsertionPointAfter(global);
    gpu::AllocOp managed =
        createManaged(rewriter, global.getLoc(), global.getType(), {}, {});
    auto copy = memref::CopyOp::create(rewriter, global.getLoc(),
                                       global.getResult(), managed.getMemref());
    rewriter.replaceUsesWithIf(
        global.getResult(), managed.getMemref(),
        [&](OpOperand &use) { return use.getOwner() != copy; });
    return success();
  }
};

struct GdnManagedHostBuffersPass
    : gdn::impl::GdnManagedHostBuffersPassBase<GdnManagedHostBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AllocToManaged, DeallocToManaged, GlobalToManaged>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
