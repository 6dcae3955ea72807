//===- AbsorbMlaDecode.cpp - the absorbed form for cached gdn.mla ---------===//
//
// Marks the gdn.mla ops that continue a cache (decode and extend) for the
// absorbed decomposition (LayerDecompositions.cpp).
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNABSORBMLADECODEPASS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
struct GdnAbsorbMlaDecodePass
    : gdn::impl::GdnAbsorbMlaDecodePassBase<GdnAbsorbMlaDecodePass> {
  using Base::Base;

  void runOnOperation() override {
    if (keySplit < 0 || keySplit > 1024) {
      getOperation().emitError()
          << "gdn-absorb-mla-decode: key-split must be 0 (off) or 1..1024, "
             "got "
          << static_cast<int64_t>(keySplit);
      return signalPassFailure();
    }
    getOperation().walk([&](MlaOp op) {
      if (!op.getPastLatent())
        return;
      op.setAbsorbed(true);
      if (keySplit > 0)
        op.setKeySplit(static_cast<uint64_t>(keySplit));
    });
  }
};
} // namespace
