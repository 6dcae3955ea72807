//===- ExportedSymbols.h - what a compiled library exports ------*- C++ -*-===//
//
// A library written by gdn-compile exports its module's public functions
// and nothing else: each public func.func N as N, its C interface
// _mlir_ciface_N and its packed entry point _gdn_packed_N (docs/c-abi.md).
// Private functions, the private copies of results-to-out-params, MLIR's
// helpers and the embedded model description stay inside the library, so
// that they cannot collide with the symbols of the program that loads it.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_COMPILER_EXPORTEDSYMBOLS_H
#define GDN_COMPILER_EXPORTEDSYMBOLS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

namespace llvm {
class Module;
} // namespace llvm

namespace mlir::gdn {

/// The names under which the public function definitions of `module` (a
/// module of func.func, before lowering) are exported.
llvm::StringSet<> exportedSymbols(ModuleOp module);

/// Gives every definition of `module` with external linkage that is not in
/// `exported` hidden visibility.
void hideUnexportedSymbols(llvm::Module &module,
                           const llvm::StringSet<> &exported);

} // namespace mlir::gdn

#endif // GDN_COMPILER_EXPORTEDSYMBOLS_H
