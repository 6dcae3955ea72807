//===- Registration.cpp - the named gdn pipelines -------------------------===//

#include "gdn/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::gdn;

/// Registers a pipeline by hand rather than through PassPipelineRegistration,
/// so that options the passes would accept and then fail on (or ignore) are
/// refused while the pipeline is parsed.
template <typename Options>
static void registerVerifiedPipeline(
    StringRef name, StringRef description,
    llvm::Error (*verify)(const Options &),
    void (*build)(OpPassManager &, const Options &)) {
  std::string prefix = (name + ": ").str();
  registerPassPipeline(
      name, description,
      [=](OpPassManager &pm, StringRef text,
          function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (llvm::Error error = verify(options))
          return errorHandler(prefix + llvm::toString(std::move(error)));
        build(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> printOptions) {
        printOptions(Options());
      });
}

void mlir::gdn::registerGdnPipelines() {
  registerVerifiedPipeline<CPUPipelineOptions>(
      "gdn-lower-to-cpu",
      "Lower gdn ops on tensors in func.func to the LLVM dialect for the CPU",
      verifyCPUPipelineOptions, buildGdnToCPUPipeline);
  registerVerifiedPipeline<CUDAPipelineOptions>(
      "gdn-lower-to-cuda",
      "Lower gdn ops on tensors in func.func to sm_90a kernels (gpu.binary) "
      "and LLVM host code",
      verifyCUDAPipelineOptions, buildGdnToCUDAPipeline);
}
