//===- CudaMemory.cpp - a CUDA model's buffers in device memory -----------===//
//
// Device memory, on the primary context of device 0 that the generated
// host code (runtime/CUDA) uses too. The copies run on the legacy default
// stream, with which the step's streams (created blocking) synchronize, so
// they are ordered after the previous step and before the next without a
// device-wide wait. Managed memory would spare the copies but not their
// cost: pages the host read migrate back at fault speed when the next step
// writes them (the logits of a long prefill took longer to initialise than
// the LM head to compute). Failures are returned, not fatal: a model that
// does not fit reports it like a CPU build that runs out of memory.
//
//===----------------------------------------------------------------------===//

#include "ModelMemory.h"

#include "gdn/Runtime/CudaStepGraph.h"

#include <cuda.h>

#include <map>
#include <mutex>

namespace {
thread_local std::string lastError;

std::string describe(const char *call, CUresult result) {
  const char *name = "unknown";
  const char *text = "";
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  return std::string(call) + ": " + name + " (" + (text ? text : "") + ")";
}

struct Device {
  CUresult status = CUDA_SUCCESS;
  std::string error;
  CUdevice device = 0;
  CUcontext context = nullptr;
};

/// The primary context of device 0, retained once; made current on the
/// calling thread.
const Device &device() {
  static Device state;
  static std::once_flag once;
  std::call_once(once, [] {
    auto check = [](const char *call, CUresult result) {
      if (result != CUDA_SUCCESS && state.status == CUDA_SUCCESS) {
        state.status = result;
        state.error = describe(call, result);
      }
      return result == CUDA_SUCCESS;
    };
    check("cuInit", cuInit(0)) &&
        check("cuDeviceGet", cuDeviceGet(&state.device, 0)) &&
        check("cuDevicePrimaryCtxRetain",
              cuDevicePrimaryCtxRetain(&state.context, state.device));
  });
  if (state.status == CUDA_SUCCESS)
    cuCtxSetCurrent(state.context);
  return state;
}
} // namespace

void gdn::model::prepareStepAllocations() {}

std::string gdn::model::memoryUnavailable() {
  const Device &d = device();
  if (d.status == CUDA_SUCCESS)
    return {};
  return "no CUDA device to run on: " + d.error;
}

void *gdn::model::allocateBytes(size_t bytes) {
  if (!memoryUnavailable().empty()) {
    lastError = memoryUnavailable();
    return nullptr;
  }
  CUdeviceptr pointer = 0;
  CUresult result = cuMemAlloc(&pointer, bytes ? bytes : 1);
  if (result != CUDA_SUCCESS) {
    lastError = describe("cuMemAlloc", result);
    return nullptr;
  }
  return reinterpret_cast<void *>(pointer);
}

void gdn::model::freeBytes(void *pointer) {
  if (pointer && device().status == CUDA_SUCCESS)
    cuMemFree(reinterpret_cast<CUdeviceptr>(pointer));
}

void *gdn::model::allocateHostBytes(size_t bytes) {
  if (!memoryUnavailable().empty()) {
    lastError = memoryUnavailable();
    return nullptr;
  }
  void *pointer = nullptr;
  CUresult result = cuMemAllocHost(&pointer, bytes ? bytes : 1);
  if (result != CUDA_SUCCESS) {
    lastError = describe("cuMemAllocHost", result);
    return nullptr;
  }
  return pointer;
}

void gdn::model::freeHostBytes(void *pointer) {
  if (pointer && device().status == CUDA_SUCCESS)
    cuMemFreeHost(pointer);
}

std::string gdn::model::memoryError() { return lastError; }

bool gdn::model::stepMemoryIsHost() { return false; }

namespace {
bool succeeded(const char *call, CUresult result) {
  if (result == CUDA_SUCCESS)
    return true;
  lastError = describe(call, result);
  return false;
}

CUdeviceptr address(const void *pointer) {
  return reinterpret_cast<CUdeviceptr>(pointer);
}
} // namespace

bool gdn::model::copyToStep(void *stepDestination, const void *hostSource,
                            size_t bytes) {
  return !bytes ||
         succeeded("cuMemcpyHtoD",
                   cuMemcpyHtoD(address(stepDestination), hostSource, bytes));
}

bool gdn::model::copyFromStep(void *hostDestination, const void *stepSource,
                              size_t bytes) {
  return !bytes ||
         succeeded("cuMemcpyDtoH",
                   cuMemcpyDtoH(hostDestination, address(stepSource), bytes));
}

bool gdn::model::copyWithinStep(void *stepDestination, const void *stepSource,
                                size_t bytes) {
  return !bytes ||
         succeeded("cuMemcpyDtoD", cuMemcpyDtoD(address(stepDestination),
                                                address(stepSource), bytes));
}

bool gdn::model::zeroStepBytes(void *stepDestination, size_t bytes) {
  return !bytes || succeeded("cuMemsetD8",
                             cuMemsetD8(address(stepDestination), 0, bytes));
}

bool gdn::model::stepReadsMappedFiles() { return false; }

void gdn::model::finishStep() {
  if (device().status == CUDA_SUCCESS)
    cuCtxSynchronize();
}

namespace {
/// A CUDA graph per batch size. The graphs launch on the legacy default
/// stream, after the copies of the token ids and before those of the
/// logits (both on that stream).
class CudaStepGraphs : public gdn::model::StepReplays {
public:
  bool run(int64_t batch, void (*step)(void **), void **descriptors) override {
    std::unique_ptr<gdn::cuda::StepGraph> &graph = graphs[batch];
    if (!graph)
      graph = std::make_unique<gdn::cuda::StepGraph>();
    return graph->run(step, descriptors) !=
           gdn::cuda::StepGraph::Outcome::Unsupported;
  }
  void counts(int64_t &recorded, int64_t &replayed,
              int64_t &updated) const override {
    recorded = replayed = updated = 0;
    for (const auto &[batch, graph] : graphs) {
      gdn::cuda::StepGraph::Statistics s = graph->statistics();
      recorded += s.builds;
      replayed += s.replays;
      updated += s.updatedNodes;
    }
  }

private:
  std::map<int64_t, std::unique_ptr<gdn::cuda::StepGraph>> graphs;
};
} // namespace

std::unique_ptr<gdn::model::StepReplays> gdn::model::makeStepReplays() {
  if (!memoryUnavailable().empty())
    return nullptr;
  return std::make_unique<CudaStepGraphs>();
}

std::string gdn::model::deviceName() {
  const Device &d = device();
  if (d.status != CUDA_SUCCESS)
    return "no CUDA device";
  char name[256] = {0};
  if (cuDeviceGetName(name, sizeof(name) - 1, d.device) != CUDA_SUCCESS)
    return "CUDA device 0";
  return std::string(name) + " (CUDA device 0)";
}
