//===- MapParallelLoops.cpp - host buffer ops as grid-mapped loops --------===//
//
// After bufferization, what the layers decompose into besides the delta
// rule (projections, norms, gates, the convolution, attention, copies into
// slices) is linalg on buffers in host code. Each op becomes linalg's own
// parallel loop nest; its parallel dimensions are linearised into one
// index, the innermost dimension fastest, and split into blocks of
// `block-threads` threads, one thread per element: neighbouring threads
// write neighbouring elements. Reductions stay loops inside the thread.
// The loops carry the mapping attributes that convert-parallel-loops-to-gpu
// turns into gpu.launch.
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNGPUMAPPARALLELLOOPSPASS
#include "gdn/Codegen/GPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
bool isInKernel(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() ||
         op->getParentOfType<gpu::GPUModuleOp>();
}

/// The op as loops in place; an op without parallel dimensions (a
/// zero-rank or all-reduction op) gets a one-iteration parallel loop around
/// it, so that it still runs on the device.
LogicalResult lowerToLoops(RewriterBase &rewriter, linalg::LinalgOp op) {
  Location loc = op.getLoc();
  if (op.getNumParallelLoops() == 0 ||
      !linalg::isParallelIterator(op.getIteratorTypesArray().front())) {
    rewriter.setInsertionPoint(op);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto wrapper = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                           ValueRange{one}, ValueRange{one});
    rewriter.moveOpBefore(op, wrapper.getBody()->getTerminator());
  }
  rewriter.setInsertionPoint(op);
  if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
    return op->emitOpError("cannot be lowered to parallel loops for the GPU");
  rewriter.eraseOp(op);
  return success();
}

gpu::ParallelLoopDimMappingAttr mappingTo(Builder &b, gpu::Processor p) {
  return gpu::ParallelLoopDimMappingAttr::get(
      b.getContext(), p, b.getDimIdentityMap(), b.getDimIdentityMap());
}

/// Rewrites an outermost host-level loop into blocks x threads over its
/// linearised iteration space (see the file comment).
LogicalResult mapToGrid(RewriterBase &rewriter, scf::ParallelOp loop,
                        int64_t blockThreads) {
  if (loop.getNumResults() != 0)
    return loop.emitOpError("with reductions cannot be mapped to the GPU");
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  auto constant = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  Value zero = constant(0), one = constant(1);
  SmallVector<Value> tripCounts;
  Value total = one;
  for (auto [lb, ub, step] : llvm::zip_equal(
           loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    Value span = arith::SubIOp::create(rewriter, loc, ub, lb);
    Value trips = arith::CeilDivUIOp::create(rewriter, loc, span, step);
    tripCounts.push_back(trips);
    total = arith::MulIOp::create(rewriter, loc, total, trips);
  }
  Value threadsPerBlock = constant(blockThreads);
  // At least one block: a launch of zero blocks is an error, and empty
  // loops occur (the copy of an MLA cache before the first token).
  Value blocks = arith::MaxUIOp::create(
      rewriter, loc,
      arith::CeilDivUIOp::create(rewriter, loc, total, threadsPerBlock), one);
  auto grid = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                      ValueRange{blocks}, ValueRange{one});
  rewriter.setInsertionPointToStart(grid.getBody());
  auto block = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                       ValueRange{threadsPerBlock},
                                       ValueRange{one});
  rewriter.setInsertionPointToStart(block.getBody());
  Value linear = arith::AddIOp::create(
      rewriter, loc,
      arith::MulIOp::create(rewriter, loc, grid.getInductionVars()[0],
                            threadsPerBlock),
      block.getInductionVars()[0]);
  Value inRange = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                        linear, total);
  auto guard = scf::IfOp::create(rewriter, loc, inRange, /*withElse=*/false);
  rewriter.setInsertionPointToStart(guard.thenBlock());
  int64_t rank = tripCounts.size();
  SmallVector<Value> ivs(rank);
  Value rest = linear;
  for (int64_t d = rank - 1; d >= 0; --d) {
    Value k = rest;
    if (d > 0) {
      k = arith::RemUIOp::create(rewriter, loc, rest, tripCounts[d]);
      rest = arith::DivUIOp::create(rewriter, loc, rest, tripCounts[d]);
    }
    ivs[d] = arith::AddIOp::create(
        rewriter, loc, loop.getLowerBound()[d],
        arith::MulIOp::create(rewriter, loc, k, loop.getStep()[d]));
  }
  Block *body = loop.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, guard.thenBlock()->getTerminator(), ivs);
  rewriter.eraseOp(loop);

  if (failed(gpu::setMappingAttr(grid,
                                 mappingTo(rewriter, gpu::Processor::BlockX))) ||
      failed(gpu::setMappingAttr(block,
                                 mappingTo(rewriter, gpu::Processor::ThreadX))))
    return grid.emitOpError("cannot be mapped to the GPU");
  // Parallel loops inside the element (after a reduction dimension) run
  // sequentially in its thread.
  LogicalResult nested = success();
  guard.walk([&](scf::ParallelOp inner) {
    SmallVector<gpu::ParallelLoopDimMappingAttr> sequential(
        inner.getNumLoops(), mappingTo(rewriter, gpu::Processor::Sequential));
    if (failed(gpu::setMappingAttr(inner, sequential)))
      nested = inner.emitOpError("cannot be mapped to the GPU");
  });
  return nested;
}

struct GdnGPUMapParallelLoopsPass
    : gdn::impl::GdnGPUMapParallelLoopsPassBase<GdnGPUMapParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (llvm::Error error = checkMapParallelLoopsOptions({blockThreads})) {
      function.emitError() << "gdn-gpu-map-parallel-loops: "
                           << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    // Copies between buffers run as kernels too: both sides are device
    // memory.
    SmallVector<memref::CopyOp> copies;
    function.walk([&](memref::CopyOp copy) {
      if (!isInKernel(copy))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
    SmallVector<linalg::LinalgOp> ops;
    function.walk([&](linalg::LinalgOp op) {
      if (!isInKernel(op))
        ops.push_back(op);
    });
    for (linalg::LinalgOp op : ops) {
      if (!op.hasPureBufferSemantics()) {
        op.emitOpError("on tensors: the GPU mapping runs after bufferization");
        return signalPassFailure();
      }
      if (failed(lowerToLoops(rewriter, op)))
        return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> outermost;
    function.walk([&](scf::ParallelOp loop) {
      if (!isInKernel(loop) && !loop->getParentOfType<scf::ParallelOp>())
        outermost.push_back(loop);
    });
    for (scf::ParallelOp loop : outermost)
      if (failed(mapToGrid(rewriter, loop, blockThreads)))
        return signalPassFailure();
  }
};
} // namespace

llvm::Error mlir::gdn::checkMapParallelLoopsOptions(
    const GdnGPUMapParallelLoopsPassOptions &options) {
  if (options.blockThreads < 32 || options.blockThreads > 1024 ||
      options.blockThreads % 32 != 0)
    return llvm::createStringError(
        "block-threads must be a multiple of 32 in 32..1024, but got " +
        llvm::Twine(options.blockThreads));
  return llvm::Error::success();
}
