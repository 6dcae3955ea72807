//===- TensorCoreBuilders.cpp - mma.sync for the tensor-core kernels ------===//

#include "gdn/Utils/TensorCoreBuilders.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

Value mlir::gdn::dynamicWorkgroupMemory(OpBuilder &b, Location loc) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  return gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
}

void mlir::gdn::multiplyAccumulate(OpBuilder &b, Location loc, Type operand,
                                   ArrayRef<Value> a, ArrayRef<Value> bFragment,
                                   MutableArrayRef<Value> acc) {
  Type f32 = b.getF32Type();
  auto accType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  NVVM::MMATypes type = NVVM::MMATypes::bf16;
  SmallVector<Value> aRegisters(a), bRegisters(bFragment);
  if (operand.isF16()) {
    // mma.sync's f16 form takes its registers as pairs of halves.
    type = NVVM::MMATypes::f16;
    auto pair = VectorType::get({2}, operand);
    for (Value &r : llvm::concat<Value>(aRegisters, bRegisters))
      r = LLVM::BitcastOp::create(b, loc, pair, r);
  }
  Value result = NVVM::MmaOp::create(
      b, loc, accType, aRegisters, bRegisters, acc, {16, 8, 16}, std::nullopt,
      std::nullopt, std::array<NVVM::MMATypes, 2>{type, type},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  for (int64_t e = 0; e < 4; ++e)
    acc[e] = LLVM::ExtractValueOp::create(b, loc, result, e);
}

SmallVector<Value> mlir::gdn::loadMatrixFragments(OpBuilder &b, Location loc,
                                                  Value tile,
                                                  ValueRange indices,
                                                  int64_t count,
                                                  bool transpose) {
  Type element = cast<MemRefType>(tile.getType()).getElementType();
  Value matrices = nvgpu::LdMatrixOp::create(
      b, loc, VectorType::get({count, 2}, element), tile, indices,
      transpose, count);
  auto wordType = VectorType::get({1}, b.getI32Type());
  SmallVector<Value> registers;
  for (int64_t i = 0; i < count; ++i) {
    Value pair = vector::ExtractOp::create(b, loc, matrices, i);
    Value word = vector::BitCastOp::create(b, loc, wordType, pair);
    registers.push_back(vector::ExtractOp::create(b, loc, word, 0));
  }
  return registers;
}
