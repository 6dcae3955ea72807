//===- PackedCInterface.cpp - C interfaces with one pointer argument ------===//

#include "gdn/ABI/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNPACKEDCINTERFACEPASS
#include "gdn/ABI/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
constexpr StringLiteral kCInterfacePrefix = "_mlir_ciface_";
constexpr StringLiteral kPackedPrefix = "_gdn_packed_";

struct GdnPackedCInterfacePass
    : gdn::impl::GdnPackedCInterfacePassBase<GdnPackedCInterfacePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    SymbolTable symbols(module);
    SmallVector<LLVM::LLVMFuncOp> interfaces;
    for (auto func : module.getOps<LLVM::LLVMFuncOp>())
      if (func.getName().starts_with(kCInterfacePrefix) && !func.isExternal())
        interfaces.push_back(func);

    for (LLVM::LLVMFuncOp callee : interfaces) {
      LLVM::LLVMFunctionType type = callee.getFunctionType();
      if (!llvm::all_of(type.getParams(),
                        [&](Type t) { return t == ptr; }) ||
          !isa<LLVM::LLVMVoidType>(type.getReturnType()))
        continue;
      std::string name =
          (kPackedPrefix + callee.getName().drop_front(kCInterfacePrefix.size()))
              .str();
      if (symbols.lookup(name)) {
        callee.emitError() << "cannot add '" << name
                           << "': the symbol already exists";
        return signalPassFailure();
      }
      Location loc = callee.getLoc();
      OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
      auto packedType =
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr});
      auto packed = LLVM::LLVMFuncOp::create(b, loc, name, packedType);
      Block *entry = packed.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      Value arguments = entry->getArgument(0);
      SmallVector<Value> operands;
      for (unsigned i = 0, e = type.getNumParams(); i < e; ++i) {
        Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, arguments,
                                         ArrayRef<LLVM::GEPArg>{int32_t(i)});
        operands.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
      }
      LLVM::CallOp::create(b, loc, callee, operands);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
    }
  }
};
} // namespace
