//===- ManagedHostBuffers.cpp - host buffers that kernels can reach -------===//
//
// A CUDA executable's @main makes its tensors on the host (constants,
// results of the functions it calls) and prints them there, while the
// kernels it launches read and write the same buffers. Managed memory is
// reachable from both sides, so every host buffer becomes a host_shared
// gpu.alloc: memref.alloc directly, and a constant (memref.get_global) as a
// managed copy made at the start of its function.
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNMANAGEDHOSTBUFFERSPASS
#include "gdn/Codegen/GPU/Passes.h.inc"
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

/// Frees a managed buffer. gpu-to-llvm lowers only the stream-ordered form
/// of gpu.dealloc; the waits around it make the free complete in place.
void deallocManaged(PatternRewriter &rewriter, Location loc, Value memref) {
  Type tokenType = gpu::AsyncTokenType::get(rewriter.getContext());
  Value ready = gpu::WaitOp::create(rewriter, loc, tokenType, ValueRange())
                    .getAsyncToken();
  Value freed = gpu::DeallocOp::create(rewriter, loc, tokenType,
                                       ValueRange{ready}, memref)
                    .getAsyncToken();
  gpu::WaitOp::create(rewriter, loc, Type(), ValueRange{freed});
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
    rewriter.setInsertionPoint(dealloc);
    deallocManaged(rewriter, dealloc.getLoc(), dealloc.getMemref());
    rewriter.eraseOp(dealloc);
    return success();
  }
};

/// Constants are read-only, so one managed copy per call serves every use:
/// made at the start of the function (not once per loop iteration) and
/// freed before each return.
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
    auto function = global->getParentOfType<func::FuncOp>();
    if (!function)
      return rewriter.notifyMatchFailure(global, "not in a function");
    Location loc = global.getLoc();
    rewriter.moveOpBefore(global, &function.getBody().front(),
                          function.getBody().front().begin());
    rewriter.setInsertionPointAfter(global);
    gpu::AllocOp managed = createManaged(rewriter, loc, global.getType(), {},
                                         {});
    auto copy = memref::CopyOp::create(rewriter, loc, global.getResult(),
                                       managed.getMemref());
    rewriter.replaceUsesWithIf(
        global.getResult(), managed.getMemref(),
        [&](OpOperand &use) { return use.getOwner() != copy; });
    function.walk([&](func::ReturnOp ret) {
      rewriter.setInsertionPoint(ret);
      deallocManaged(rewriter, loc, managed.getMemref());
    });
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
