//===- CudaStepGraph.h - a generated host function as a CUDA graph -*- C++
//-*-===//
//
// A compiled model's decode step is about 400 kernel launches from the
// generated host code; launched one by one they cost more host time than
// the kernels take on the GPU. A StepGraph runs such a function as one CUDA
// graph instead.
//
// The first run records the function's launches, allocations, copies and
// fills (the mgpu* calls of runtime/CUDA) as the nodes of a graph, in
// order, without running anything, then instantiates and launches it.
// Later runs execute the host code again in the same recording mode, which
// only collects the calls, compare them with the graph's nodes, update in
// the executable graph the nodes whose arguments changed (the caches' new
// addresses, the attention's longer cache), and launch the graph. A call
// sequence of another shape (another kernel, a larger temporary, a grid
// that became empty) rebuilds the graph.
//
// Temporaries are graph allocations: their addresses are fixed for the
// graph's life, and each is given the next power of two of its first size,
// so that those growing with the context rebuild the graph only at
// doublings.
//
// This requires of the host code what gdn's lowering guarantees for a step:
// every effect on the device goes through the mgpu* calls, and the host
// never reads device memory inside the function.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_CUDASTEPGRAPH_H
#define GDN_RUNTIME_CUDASTEPGRAPH_H

#include <cstddef>
#include <cstdint>
#include <memory>

namespace gdn::cuda {

class StepGraph {
public:
  StepGraph();
  ~StepGraph();
  StepGraph(const StepGraph &) = delete;
  StepGraph &operator=(const StepGraph &) = delete;

  enum class Outcome {
    /// The graph was built from this call and launched.
    Built,
    /// The existing graph was updated where needed and launched.
    Replayed,
    /// Nothing ran: the function does something a graph cannot hold (a
    /// managed allocation, a copy to or from pageable host memory, a free
    /// of memory it did not allocate), or launches are being timed. The
    /// caller runs it directly.
    Unsupported,
  };

  /// Runs `function(arguments)` through the graph, launched on the legacy
  /// default stream (ordered after the caller's copies on it); returns
  /// without waiting for the GPU.
  Outcome run(void (*function)(void **), void **arguments);

  /// Counters for people and tests: graphs built, replays, and kernel nodes
  /// whose arguments were updated over all replays.
  struct Statistics {
    int64_t builds = 0;
    int64_t replays = 0;
    int64_t updatedNodes = 0;
    int64_t nodes = 0;
  };
  Statistics statistics() const;

  class Recording;

private:
  std::unique_ptr<Recording> recording;
};

} // namespace gdn::cuda

#endif // GDN_RUNTIME_CUDASTEPGRAPH_H
