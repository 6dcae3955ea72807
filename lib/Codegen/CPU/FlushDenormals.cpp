//===- FlushDenormals.cpp - FTZ/DAZ around public functions ---------------===//

#include "gdn/Codegen/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNFLUSHDENORMALSPASS
#include "gdn/Codegen/CPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// MXCSR bits: flush to zero (15) and denormals are zero (6).
constexpr int32_t kFlushDenormalsBits = 0x8040;

struct GdnFlushDenormalsPass
    : gdn::impl::GdnFlushDenormalsPassBase<GdnFlushDenormalsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.isPublic())
      return;
    MLIRContext *ctx = &getContext();
    Location loc = func.getLoc();
    OpBuilder b(ctx);
    b.setInsertionPointToStart(&func.getBody().front());
    Type i32 = b.getI32Type();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    Value one = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(1));
    Value slot = LLVM::AllocaOp::create(b, loc, ptr, i32, one, 4);
    LLVM::CallIntrinsicOp::create(
        b, loc, b.getStringAttr("llvm.x86.sse.stmxcsr"), ValueRange{slot});
    Value saved = LLVM::LoadOp::create(b, loc, i32, slot);
    Value bits = LLVM::ConstantOp::create(
        b, loc, i32, b.getI32IntegerAttr(kFlushDenormalsBits));
    Value flushing = LLVM::OrOp::create(b, loc, saved, bits);
    LLVM::StoreOp::create(b, loc, flushing, slot);
    LLVM::CallIntrinsicOp::create(
        b, loc, b.getStringAttr("llvm.x86.sse.ldmxcsr"), ValueRange{slot});
    func.walk([&](func::ReturnOp ret) {
      OpBuilder rb(ret);
      LLVM::StoreOp::create(rb, ret.getLoc(), saved, slot);
      LLVM::CallIntrinsicOp::create(rb, ret.getLoc(),
                                    rb.getStringAttr("llvm.x86.sse.ldmxcsr"),
                                    ValueRange{slot});
    });
  }
};
} // namespace
