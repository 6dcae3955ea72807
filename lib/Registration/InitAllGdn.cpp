//===- InitAllGdn.cpp - register gdn and what its pipelines use -----------===//

#include "gdn/InitAllGdn.h"
#include "gdn/ABI/Passes.h"
#include "gdn/Codegen/CPU/Passes.h"
#include "gdn/Codegen/GPU/Passes.h"
#include "gdn/Conversion/Passes.h"
#include "gdn/Dialect/Gdn/IR/GdnDialect.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Transforms.h"
#include "gdn/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void mlir::gdn::registerAllGdnDialects(DialectRegistry &registry) {
  registry.insert<GdnDialect>();
  registerGdnDecompositionInterfaces(registry);
  registerQwenDecompositionInterfaces(registry);
  // gdn-opt is meant as a drop-in mlir-opt: tests and users mix gdn ops with
  // any upstream dialect, and the lowering pipelines need the extensions
  // (bufferization and ConvertToLLVM models) registered.
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
}

void mlir::gdn::registerAllGdnPasses() {
  registerAllPasses();
  registerGdnPasses();
  registerGdnCPUPasses();
  registerGdnGPUPasses();
  registerGdnABIPasses();
  registerGdnConversionPasses();
  registerGdnPipelines();
}
