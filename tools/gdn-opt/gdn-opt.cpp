//===- gdn-opt.cpp - mlir-opt with the gdn dialect and pipelines ----------===//

#include "gdn/InitAllGdn.h"
#include "gdn/Version.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    mlir::gdn::printVersion(os, "gdn-opt");
  });
  mlir::gdn::registerAllGdnPasses();
  mlir::DialectRegistry registry;
  mlir::gdn::registerAllGdnDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "gdn optimizer driver: gated delta-rule linear attention\n",
      registry));
}
