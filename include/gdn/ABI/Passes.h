//===- Passes.h - ABI passes ------------------------------------*- C++ -*-===//
//
// The C ABI of compiled libraries (docs/c-abi.md): arguments kept
// unmodified, C interfaces, and the packed interface of model runtimes.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_ABI_PASSES_H
#define GDN_ABI_PASSES_H

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gdn {

/// The function attribute in which gdn-read-only-arguments lists the
/// arguments updated in place (marked `gdn.in_place`); by the C ABI their
/// buffers overlap no other argument.
inline constexpr StringLiteral kInPlaceArgumentsAttrName =
    "gdn.in_place_arguments";

#define GEN_PASS_DECL
#include "gdn/ABI/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gdn/ABI/Passes.h.inc"

} // namespace mlir::gdn

#endif // GDN_ABI_PASSES_H
