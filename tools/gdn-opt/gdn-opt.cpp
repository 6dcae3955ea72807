//===- gdn-opt.cpp - mlir-opt with the gdn dialect and pipelines ----------===//

#include "gdn/InitAllGdn.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::gdn::registerAllGdnPasses();
  mlir::DialectRegistry registry;
  mlir::gdn::registerAllGdnDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "gdn optimizer driver: gated delta-rule linear attention\n",
      registry));
}
