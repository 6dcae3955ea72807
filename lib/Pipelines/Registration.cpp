//===- Registration.cpp - the named gdn pipelines -------------------------===//

#include "gdn/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

void mlir::gdn::registerGdnPipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "gdn-lower-to-cpu",
      "Lower gdn ops on tensors in func.func to the LLVM dialect for the CPU",
      buildGdnToCPUPipeline);
  PassPipelineRegistration<CUDAPipelineOptions>(
      "gdn-lower-to-cuda",
      "Lower gdn ops on tensors in func.func to sm_90a kernels (gpu.binary) "
      "and LLVM host code",
      buildGdnToCUDAPipeline);
}
