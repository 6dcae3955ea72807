//===- ExportedSymbols.cpp - what a compiled library exports --------------===//

#include "gdn/Compiler/ExportedSymbols.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/IR/Module.h"

using namespace mlir;

llvm::StringSet<> gdn::exportedSymbols(ModuleOp module) {
  llvm::StringSet<> names;
  for (auto function : module.getOps<func::FuncOp>()) {
    if (!function.isPublic() || function.isExternal())
      continue;
    StringRef name = function.getSymName();
    names.insert(name);
    names.insert(("_mlir_ciface_" + name).str());
    names.insert(("_gdn_packed_" + name).str());
  }
  return names;
}

void gdn::hideUnexportedSymbols(llvm::Module &module,
                                const llvm::StringSet<> &exported) {
  for (llvm::GlobalValue &value : module.global_values()) {
    if (value.isDeclaration() || !value.hasExternalLinkage() ||
        exported.contains(value.getName()))
      continue;
    value.setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
}
