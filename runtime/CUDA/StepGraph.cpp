//===- StepGraph.cpp - a generated host function as a CUDA graph ----------===//
//
// See gdn/Runtime/CudaStepGraph.h. The graph is built with the explicit
// graph API rather than by stream capture: the nodes are known one by one,
// in the order of the calls, which is what lets a later run update exactly
// the nodes whose arguments changed; and nothing runs while recording, so a
// call that a graph cannot hold is found before any work is done.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "StepGraphRecording.h"

#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

using namespace gdn::cuda;

namespace {
thread_local StepGraph::Recording *active = nullptr;

/// Where each parameter of a kernel lies in its argument bytes.
struct ParameterLayout {
  std::vector<std::pair<size_t, size_t>> offsetAndSize;
  size_t bytes = 0;
};

/// The smallest power of two >= `bytes` (and >= 256): a temporary whose
/// size follows the context fits its node until the context doubles.
size_t capacityFor(uint64_t bytes) {
  size_t capacity = 256;
  while (capacity < bytes)
    capacity *= 2;
  return capacity;
}
} // namespace

/// One call of the recorded function, as a node of the graph.
struct RecordedCall {
  enum class Kind { Kernel, Allocation, Free, Copy, Fill };
  explicit RecordedCall(Kind kind) : kind(kind) {}
  Kind kind;
  CUgraphNode node = nullptr;
  // Kernel.
  CUfunction function = nullptr;
  unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  unsigned sharedMemoryBytes = 0;
  std::vector<unsigned char> arguments;
  const ParameterLayout *layout = nullptr;
  // Allocation (address, bytes = its capacity), free (address), copy
  // (destination, source, bytes), fill (destination, value, bytes = count).
  CUdeviceptr address = 0, source = 0;
  size_t bytes = 0;
  unsigned value = 0;

  bool sameShape(const RecordedCall &other) const {
    if (kind != other.kind)
      return false;
    if (kind != Kind::Kernel)
      return true;
    return function == other.function &&
           std::memcmp(block, other.block, sizeof(block)) == 0 &&
           sharedMemoryBytes == other.sharedMemoryBytes;
  }
};

class StepGraph::Recording {
public:
  enum class Mode { Build, Compare };

  ~Recording() { discard(); }

  Outcome run(void (*function)(void **), void **arguments);
  Statistics statistics;

  void launch(CUfunction function, const unsigned grid[3],
              const unsigned block[3], unsigned sharedMemoryBytes,
              void **params, size_t paramsCount);
  void *allocate(uint64_t bytes, bool isHostShared);
  void free(void *pointer);
  void copy(void *destination, const void *source, size_t bytes);
  void fill32(void *destination, unsigned value, size_t count);

private:
  /// Runs the host function with this recording active.
  void record(Mode mode, void (*function)(void **), void **arguments);
  /// Adds `call` to the graph being built, after the previous node.
  void addNode(RecordedCall call);
  /// `call` compared with the graph's node at the cursor.
  void compare(RecordedCall call);
  void kernelParams(const RecordedCall &call, std::vector<void *> &pointers,
                    CUDA_KERNEL_NODE_PARAMS &params);
  CUDA_MEMCPY3D copyParams(const RecordedCall &call);
  CUDA_MEMSET_NODE_PARAMS fillParams(const RecordedCall &call);
  bool isDeviceMemory(CUdeviceptr address);
  const ParameterLayout *layoutOf(CUfunction function, size_t paramsCount);
  void discard();

  Mode mode = Mode::Build;
  CUcontext context = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec executable = nullptr;
  /// The graph's nodes in call order, with the arguments they hold.
  std::vector<RecordedCall> calls;
  /// Compare mode: the next node, whether this run's calls left the
  /// graph's shape, and the nodes to update.
  size_t cursor = 0;
  bool diverged = false;
  std::vector<std::pair<size_t, RecordedCall>> updates;
  /// Build mode: something a graph cannot hold was called.
  bool unsupported = false;
  /// Once unsupported, always: the function is run directly.
  bool neverSupported = false;
  /// Compare mode after divergence: distinct stand-in addresses.
  uintptr_t standIn = 0;
  std::unordered_map<CUfunction, ParameterLayout> layouts;
};

StepGraph::Recording *gdn::cuda::activeRecording() { return active; }

const ParameterLayout *StepGraph::Recording::layoutOf(CUfunction function,
                                                      size_t paramsCount) {
  auto found = layouts.find(function);
  if (found != layouts.end())
    return found->second.offsetAndSize.size() == paramsCount ? &found->second
                                                             : nullptr;
  ParameterLayout layout;
  for (size_t i = 0; i < paramsCount; ++i) {
    size_t offset = 0, size = 0;
    if (cuFuncGetParamInfo(function, i, &offset, &size) != CUDA_SUCCESS)
      return nullptr;
    layout.offsetAndSize.emplace_back(layout.bytes, size);
    layout.bytes += size;
  }
  return &layouts.emplace(function, std::move(layout)).first->second;
}

bool StepGraph::Recording::isDeviceMemory(CUdeviceptr address) {
  for (const RecordedCall &call : calls)
    if (call.kind == RecordedCall::Kind::Allocation &&
        address >= call.address && address < call.address + call.bytes)
      return true;
  unsigned type = 0;
  return cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                               address) == CUDA_SUCCESS &&
         type == CU_MEMORYTYPE_DEVICE;
}

void StepGraph::Recording::kernelParams(const RecordedCall &call,
                                        std::vector<void *> &pointers,
                                        CUDA_KERNEL_NODE_PARAMS &params) {
  pointers.clear();
  for (auto [offset, size] : call.layout->offsetAndSize)
    pointers.push_back(const_cast<unsigned char *>(call.arguments.data()) +
                       offset);
  params = {};
  params.func = call.function;
  params.gridDimX = call.grid[0];
  params.gridDimY = call.grid[1];
  params.gridDimZ = call.grid[2];
  params.blockDimX = call.block[0];
  params.blockDimY = call.block[1];
  params.blockDimZ = call.block[2];
  params.sharedMemBytes = call.sharedMemoryBytes;
  params.kernelParams = pointers.data();
}

CUDA_MEMCPY3D StepGraph::Recording::copyParams(const RecordedCall &call) {
  CUDA_MEMCPY3D params = {};
  params.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  params.srcDevice = call.source;
  params.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  params.dstDevice = call.address;
  params.WidthInBytes = call.bytes;
  params.Height = 1;
  params.Depth = 1;
  return params;
}

CUDA_MEMSET_NODE_PARAMS
StepGraph::Recording::fillParams(const RecordedCall &call) {
  CUDA_MEMSET_NODE_PARAMS params = {};
  params.dst = call.address;
  params.value = call.value;
  params.elementSize = 4;
  params.width = call.bytes;
  params.height = 1;
  return params;
}

void StepGraph::Recording::addNode(RecordedCall call) {
  if (unsupported)
    return;
  CUgraphNode previous = calls.empty() ? nullptr : calls.back().node;
  size_t dependencies = previous ? 1 : 0;
  switch (call.kind) {
  case RecordedCall::Kind::Kernel: {
    std::vector<void *> pointers;
    CUDA_KERNEL_NODE_PARAMS params;
    kernelParams(call, pointers, params);
    GDN_CUDA_CHECK(cuGraphAddKernelNode(&call.node, graph, &previous,
                                        dependencies, &params));
    break;
  }
  case RecordedCall::Kind::Allocation: {
    CUdevice device;
    GDN_CUDA_CHECK(cuCtxGetDevice(&device));
    CUDA_MEM_ALLOC_NODE_PARAMS params = {};
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = device;
    params.bytesize = call.bytes;
    GDN_CUDA_CHECK(cuGraphAddMemAllocNode(&call.node, graph, &previous,
                                          dependencies, &params));
    call.address = params.dptr;
    break;
  }
  case RecordedCall::Kind::Free:
    GDN_CUDA_CHECK(cuGraphAddMemFreeNode(&call.node, graph, &previous,
                                         dependencies, call.address));
    break;
  case RecordedCall::Kind::Copy: {
    CUDA_MEMCPY3D params = copyParams(call);
    GDN_CUDA_CHECK(cuGraphAddMemcpyNode(&call.node, graph, &previous,
                                        dependencies, &params, context));
    break;
  }
  case RecordedCall::Kind::Fill: {
    CUDA_MEMSET_NODE_PARAMS params = fillParams(call);
    GDN_CUDA_CHECK(cuGraphAddMemsetNode(&call.node, graph, &previous,
                                        dependencies, &params, context));
    break;
  }
  }
  calls.push_back(std::move(call));
}

void StepGraph::Recording::compare(RecordedCall call) {
  if (diverged)
    return;
  if (cursor >= calls.size() || !call.sameShape(calls[cursor])) {
    diverged = true;
    return;
  }
  const RecordedCall &recorded = calls[cursor];
  bool changed = false;
  switch (call.kind) {
  case RecordedCall::Kind::Kernel:
    changed = std::memcmp(call.grid, recorded.grid, sizeof(call.grid)) != 0 ||
              call.arguments != recorded.arguments;
    break;
  case RecordedCall::Kind::Allocation:
  case RecordedCall::Kind::Free:
    break; // checked by the caller
  case RecordedCall::Kind::Copy:
    changed = call.address != recorded.address ||
              call.source != recorded.source || call.bytes != recorded.bytes;
    if (changed &&
        (!isDeviceMemory(call.address) || !isDeviceMemory(call.source)))
      diverged = true;
    break;
  case RecordedCall::Kind::Fill:
    changed = call.address != recorded.address ||
              call.value != recorded.value || call.bytes != recorded.bytes;
    break;
  }
  if (changed) {
    call.node = recorded.node;
    updates.emplace_back(cursor, std::move(call));
  }
  ++cursor;
}

void StepGraph::Recording::launch(CUfunction function, const unsigned grid[3],
                                  const unsigned block[3],
                                  unsigned sharedMemoryBytes, void **params,
                                  size_t paramsCount) {
  RecordedCall call(RecordedCall::Kind::Kernel);
  call.function = function;
  std::memcpy(call.grid, grid, sizeof(call.grid));
  std::memcpy(call.block, block, sizeof(call.block));
  call.sharedMemoryBytes = sharedMemoryBytes;
  call.layout = layoutOf(function, paramsCount);
  if (!call.layout) {
    unsupported = diverged = true;
    return;
  }
  // The common case of a replay, without copying the arguments: the node
  // at the cursor runs this kernel as it is.
  if (mode == Mode::Compare && !diverged && cursor < calls.size() &&
      call.sameShape(calls[cursor]) &&
      std::memcmp(call.grid, calls[cursor].grid, sizeof(call.grid)) == 0) {
    const RecordedCall &recorded = calls[cursor];
    bool same = true;
    for (size_t i = 0; same && i < paramsCount; ++i) {
      auto [offset, size] = call.layout->offsetAndSize[i];
      same =
          std::memcmp(recorded.arguments.data() + offset, params[i], size) == 0;
    }
    if (same) {
      ++cursor;
      return;
    }
  }
  call.arguments.resize(call.layout->bytes);
  for (size_t i = 0; i < paramsCount; ++i) {
    auto [offset, size] = call.layout->offsetAndSize[i];
    std::memcpy(call.arguments.data() + offset, params[i], size);
  }
  if (mode == Mode::Build)
    addNode(std::move(call));
  else
    compare(std::move(call));
}

void *StepGraph::Recording::allocate(uint64_t bytes, bool isHostShared) {
  if (bytes == 0)
    return nullptr;
  if (isHostShared) {
    unsupported = diverged = true;
  } else if (mode == Mode::Build) {
    RecordedCall call(RecordedCall::Kind::Allocation);
    call.bytes = capacityFor(bytes);
    addNode(std::move(call));
    if (!unsupported)
      return reinterpret_cast<void *>(calls.back().address);
  } else if (!diverged && cursor < calls.size() &&
             calls[cursor].kind == RecordedCall::Kind::Allocation &&
             calls[cursor].bytes >= bytes) {
    return reinterpret_cast<void *>(calls[cursor++].address);
  } else {
    diverged = true;
  }
  // Nothing runs on this address: the graph is rebuilt or not used.
  standIn += capacityFor(bytes);
  return reinterpret_cast<void *>(standIn);
}

void StepGraph::Recording::free(void *pointer) {
  if (!pointer)
    return;
  auto address = reinterpret_cast<CUdeviceptr>(pointer);
  if (mode == Mode::Build) {
    bool ours = false;
    for (const RecordedCall &call : calls)
      ours |= call.kind == RecordedCall::Kind::Allocation &&
              call.address == address;
    if (!ours) {
      unsupported = true;
      return;
    }
    RecordedCall call(RecordedCall::Kind::Free);
    call.address = address;
    addNode(std::move(call));
    return;
  }
  if (diverged)
    return;
  if (cursor < calls.size() && calls[cursor].kind == RecordedCall::Kind::Free &&
      calls[cursor].address == address)
    ++cursor;
  else
    diverged = true;
}

void StepGraph::Recording::copy(void *destination, const void *source,
                                size_t bytes) {
  if (bytes == 0)
    return;
  RecordedCall call(RecordedCall::Kind::Copy);
  call.address = reinterpret_cast<CUdeviceptr>(destination);
  call.source = reinterpret_cast<CUdeviceptr>(source);
  call.bytes = bytes;
  if (mode == Mode::Build) {
    if (!isDeviceMemory(call.address) || !isDeviceMemory(call.source)) {
      unsupported = true;
      return;
    }
    addNode(std::move(call));
  } else {
    compare(std::move(call));
  }
}

void StepGraph::Recording::fill32(void *destination, unsigned value,
                                  size_t count) {
  if (count == 0)
    return;
  RecordedCall call(RecordedCall::Kind::Fill);
  call.address = reinterpret_cast<CUdeviceptr>(destination);
  call.value = value;
  call.bytes = count;
  if (mode == Mode::Build)
    addNode(std::move(call));
  else
    compare(std::move(call));
}

void StepGraph::Recording::record(Mode recordMode, void (*function)(void **),
                                  void **arguments) {
  mode = recordMode;
  cursor = 0;
  diverged = unsupported = false;
  updates.clear();
  StepGraph::Recording *outer = active;
  active = this;
  function(arguments);
  active = outer;
}

void StepGraph::Recording::discard() {
  if (executable) {
    // A launch of it may still run: its nodes' memory is the graph's.
    cuCtxSynchronize();
    cuGraphExecDestroy(executable);
  }
  if (graph)
    cuGraphDestroy(graph);
  executable = nullptr;
  graph = nullptr;
  calls.clear();
}

StepGraph::Outcome StepGraph::Recording::run(void (*function)(void **),
                                             void **arguments) {
  if (neverSupported || launchesAreTimed())
    return Outcome::Unsupported;
  makeContextCurrent();
  GDN_CUDA_CHECK(cuCtxGetCurrent(&context));
  CUstream legacy = nullptr;
  if (executable) {
    record(Mode::Compare, function, arguments);
    if (!diverged && cursor == calls.size()) {
      for (auto &[index, call] : updates) {
        switch (call.kind) {
        case RecordedCall::Kind::Kernel: {
          std::vector<void *> pointers;
          CUDA_KERNEL_NODE_PARAMS params;
          kernelParams(call, pointers, params);
          GDN_CUDA_CHECK(
              cuGraphExecKernelNodeSetParams(executable, call.node, &params));
          ++statistics.updatedNodes;
          break;
        }
        case RecordedCall::Kind::Copy: {
          CUDA_MEMCPY3D params = copyParams(call);
          GDN_CUDA_CHECK(cuGraphExecMemcpyNodeSetParams(executable, call.node,
                                                        &params, context));
          break;
        }
        case RecordedCall::Kind::Fill: {
          CUDA_MEMSET_NODE_PARAMS params = fillParams(call);
          GDN_CUDA_CHECK(cuGraphExecMemsetNodeSetParams(executable, call.node,
                                                        &params, context));
          break;
        }
        case RecordedCall::Kind::Allocation:
        case RecordedCall::Kind::Free:
          break;
        }
        calls[index] = std::move(call);
      }
      GDN_CUDA_CHECK(cuGraphLaunch(executable, legacy));
      ++statistics.replays;
      return Outcome::Replayed;
    }
    if (unsupported) {
      neverSupported = true;
      discard();
      return Outcome::Unsupported;
    }
    discard();
  }
  GDN_CUDA_CHECK(cuGraphCreate(&graph, 0));
  record(Mode::Build, function, arguments);
  if (unsupported) {
    neverSupported = true;
    discard();
    return Outcome::Unsupported;
  }
  GDN_CUDA_CHECK(cuGraphInstantiate(
      &executable, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
  GDN_CUDA_CHECK(cuGraphLaunch(executable, legacy));
  ++statistics.builds;
  statistics.nodes = static_cast<int64_t>(calls.size());
  return Outcome::Built;
}

void gdn::cuda::recordLaunch(StepGraph::Recording &recording,
                             CUfunction function, const unsigned grid[3],
                             const unsigned block[3],
                             unsigned sharedMemoryBytes, void **params,
                             size_t paramsCount) {
  recording.launch(function, grid, block, sharedMemoryBytes, params,
                   paramsCount);
}

void *gdn::cuda::recordAllocation(StepGraph::Recording &recording,
                                  uint64_t bytes, bool isHostShared) {
  return recording.allocate(bytes, isHostShared);
}

void gdn::cuda::recordFree(StepGraph::Recording &recording, void *pointer) {
  recording.free(pointer);
}

void gdn::cuda::recordCopy(StepGraph::Recording &recording, void *destination,
                           const void *source, size_t bytes) {
  recording.copy(destination, source, bytes);
}

void gdn::cuda::recordFill32(StepGraph::Recording &recording, void *destination,
                             unsigned value, size_t count) {
  recording.fill32(destination, value, count);
}

StepGraph::StepGraph() : recording(std::make_unique<Recording>()) {}
StepGraph::~StepGraph() = default;

StepGraph::Outcome StepGraph::run(void (*function)(void **), void **arguments) {
  return recording->run(function, arguments);
}

StepGraph::Statistics StepGraph::statistics() const {
  return recording->statistics;
}
