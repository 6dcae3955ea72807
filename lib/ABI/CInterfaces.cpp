//===- CInterfaces.cpp - export public functions' C interfaces ------------===//

#include "gdn/ABI/Passes.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNEXPORTCINTERFACESPASS
#include "gdn/ABI/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
struct GdnExportCInterfacesPass
    : gdn::impl::GdnExportCInterfacesPassBase<GdnExportCInterfacesPass> {
  using Base::Base;

  void runOnOperation() override {
    UnitAttr unit = UnitAttr::get(&getContext());
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), unit);
  }
};
} // namespace
