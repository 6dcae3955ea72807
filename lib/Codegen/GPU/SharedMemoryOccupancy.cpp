//===- SharedMemoryOccupancy.cpp - minctasm from workgroup memory ---------===//

#include "gdn/Codegen/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNSHAREDMEMORYOCCUPANCYPASS
#include "gdn/Codegen/GPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// The attribute NVVM lowering turns into PTX's .minnctapersm.
constexpr StringLiteral kMinBlocksAttr = "nvvm.minctasm";

struct GdnSharedMemoryOccupancyPass
    : gdn::impl::GdnSharedMemoryOccupancyPassBase<
          GdnSharedMemoryOccupancyPass> {
  using Base::Base;

  void runOnOperation() override {
    if (llvm::Error error = checkSharedMemoryOccupancyOptions(
            {sharedMemoryPerMultiprocessor, reservedPerBlock, maxBlocks})) {
      getOperation().emitError() << "gdn-shared-memory-occupancy: "
                                 << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    SymbolTableCollection symbols;
    getOperation().walk([&](gpu::LaunchFuncOp launch) {
      Value size = launch.getDynamicSharedMemorySize();
      APInt bytes;
      if (!size || !matchPattern(size, m_ConstantInt(&bytes)) ||
          bytes.isZero())
        return;
      auto kernel = symbols.lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      if (!kernel)
        return;
      int64_t blocks = std::clamp<int64_t>(
          sharedMemoryPerMultiprocessor /
              (bytes.getSExtValue() + reservedPerBlock),
          1, maxBlocks);
      if (auto existing = kernel->getAttrOfType<IntegerAttr>(kMinBlocksAttr))
        blocks = std::min(blocks, existing.getInt());
      kernel->setAttr(kMinBlocksAttr,
                      IntegerAttr::get(IntegerType::get(&getContext(), 32),
                                       blocks));
    });
  }
};
} // namespace

llvm::Error mlir::gdn::checkSharedMemoryOccupancyOptions(
    const GdnSharedMemoryOccupancyPassOptions &options) {
  if (options.sharedMemoryPerMultiprocessor <= 0 ||
      options.reservedPerBlock < 0 || options.maxBlocks < 1)
    return llvm::createStringError(
        "shared-memory-per-multiprocessor must be positive, "
        "reserved-per-block non-negative and max-blocks at least 1");
  return llvm::Error::success();
}
