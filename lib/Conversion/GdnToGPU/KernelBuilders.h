//===- KernelBuilders.h - scalar builders shared by the GPU kernels -------===//

#ifndef GDN_LIB_CONVERSION_GDNTOGPU_KERNELBUILDERS_H
#define GDN_LIB_CONVERSION_GDNTOGPU_KERNELBUILDERS_H

#include "mlir/IR/Builders.h"

namespace mlir::gdn {

/// The buffer of a tensor operand, read-only.
Value toBuffer(OpBuilder &b, Location loc, Value tensor);

/// x * y + z as arith ops allowed to contract: NVPTX emits fma.rn.f32,
/// where math.fma would become a libdevice call.
Value multiplyAdd(OpBuilder &b, Location loc, Value x, Value y, Value z);

/// exp(x) = 2^(x log2 e) through the hardware's ex2.approx (max relative
/// error 2^-22). math.exp would become a libdevice call, and libdevice is
/// only linked when the CUDA toolkit is found in the environment.
Value exponential(OpBuilder &b, Location loc, Value x);

Value indexConstant(OpBuilder &b, Location loc, int64_t value);

} // namespace mlir::gdn

#endif // GDN_LIB_CONVERSION_GDNTOGPU_KERNELBUILDERS_H
