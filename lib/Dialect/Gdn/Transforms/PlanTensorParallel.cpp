//===- PlanTensorParallel.cpp - the tensor-parallel plan of a model -------===//
//
// gdn-plan-tensor-parallel: a #gdn.tensor_parallel on every layer op, from
// its head counts and weight shapes (Passes.td says which split each layer
// kind takes).
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNPLANTENSORPARALLELPASS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
constexpr StringLiteral kPlanName = "gdn.tensor_parallel";

struct GdnPlanTensorParallelPass
    : gdn::impl::GdnPlanTensorParallelPassBase<GdnPlanTensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    if (ranks < 1) {
      getOperation().emitError()
          << "gdn-plan-tensor-parallel: ranks must be >= 1, got "
          << int64_t(ranks);
      return signalPassFailure();
    }
    WalkResult result = getOperation().walk([&](Operation *op) {
      return failed(plan(op)) ? WalkResult::interrupt()
                              : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

private:
  void attach(Operation *op, TensorSplit split, int64_t local,
              int64_t localKeyHeads, Collective collective) {
    op->setAttr(kPlanName,
                TensorParallelAttr::get(op->getContext(), ranks, split, local,
                                        localKeyHeads, collective));
  }

  /// Heads split whole: `counts` (name, count) must all divide by the
  /// ranks.
  LogicalResult divides(Operation *op,
                        ArrayRef<std::pair<StringRef, int64_t>> counts) {
    for (auto [name, count] : counts)
      if (count % ranks != 0)
        return op->emitOpError()
               << "has " << count << " " << name
               << ", which do not split over " << int64_t(ranks)
               << " tensor-parallel ranks (a rank holds whole heads)";
    return success();
  }

  LogicalResult plan(Operation *op) {
    // Heads of one kind: the design document's GDN layer and MLA.
    std::optional<int64_t> onlyHeads;
    if (auto layer = dyn_cast<GatedDeltaNetOp>(op))
      onlyHeads = layer.getNumHeads();
    if (auto layer = dyn_cast<MlaOp>(op))
      onlyHeads = layer.getNumHeads();
    if (onlyHeads) {
      if (failed(divides(op, {{"heads", *onlyHeads}})))
        return failure();
      attach(op, TensorSplit::heads, *onlyHeads / ranks, 0,
             Collective::all_reduce);
      return success();
    }
    if (auto layer = dyn_cast<QwenGatedDeltaNetOp>(op)) {
      int64_t keyHeads = layer.getNumKeyHeads();
      int64_t valueHeads = layer.getNumValueHeads();
      if (failed(divides(op, {{"key heads", keyHeads},
                              {"value heads", valueHeads}})))
        return failure();
      attach(op, TensorSplit::heads, valueHeads / ranks, keyHeads / ranks,
             Collective::all_reduce);
      return success();
    }
    if (auto layer = dyn_cast<GatedAttentionOp>(op)) {
      int64_t heads = layer.getNumHeads(), kvHeads = layer.getNumKvHeads();
      if (failed(divides(op, {{"query heads", heads},
                              {"key/value heads", kvHeads}})))
        return failure();
      attach(op, TensorSplit::heads, heads / ranks, kvHeads / ranks,
             Collective::all_reduce);
      return success();
    }
    if (auto mlp = dyn_cast<SwiGluMlpOp>(op)) {
      // gate: [intermediate, d_model].
      int64_t columns = cast<RankedTensorType>(mlp.getGate().getType())
                            .getDimSize(0);
      if (ShapedType::isDynamic(columns) || columns % ranks != 0)
        return op->emitOpError()
               << "has " << columns
               << " intermediate columns, which do not split over "
               << int64_t(ranks) << " tensor-parallel ranks";
      attach(op, TensorSplit::mlp, columns / ranks, 0,
             Collective::all_reduce);
      return success();
    }
    if (auto head = dyn_cast<LmHeadOp>(op)) {
      // weight: [vocabulary, d_model].
      int64_t rows = cast<RankedTensorType>(head.getWeight().getType())
                         .getDimSize(0);
      if (ShapedType::isDynamic(rows) || rows < ranks)
        return op->emitOpError()
               << "has a vocabulary of " << rows
               << " rows, too few (or unknown) for " << int64_t(ranks)
               << " tensor-parallel ranks";
      attach(op, TensorSplit::vocabulary, llvm::divideCeil(rows, ranks), 0,
             Collective::all_gather);
      return success();
    }
    if (isa<EmbedOp, RmsNormOp>(op))
      attach(op, TensorSplit::replicated, 0, 0, Collective::none);
    return success();
  }
};
} // namespace
