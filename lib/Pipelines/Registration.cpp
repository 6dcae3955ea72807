//===- Registration.cpp - the named gdn pipelines -------------------------===//

#include "gdn/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

void mlir::gdn::registerGdnPipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "gdn-lower-to-cpu",
      "Lower gdn ops on tensors in func.func to the LLVM dialect for the CPU",
      buildGdnToCPUPipeline);
  // Registered by hand rather than through PassPipelineRegistration, so that
  // options the passes would accept and then fail on (or ignore) are refused
  // while the pipeline is parsed.
  registerPassPipeline(
      "gdn-lower-to-cuda",
      "Lower gdn ops on tensors in func.func to sm_90a kernels (gpu.binary) "
      "and LLVM host code",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CUDAPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (llvm::Error error = verifyCUDAPipelineOptions(options))
          return errorHandler("gdn-lower-to-cuda: " +
                              llvm::toString(std::move(error)));
        buildGdnToCUDAPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> printOptions) {
        printOptions(CUDAPipelineOptions());
      });
}
