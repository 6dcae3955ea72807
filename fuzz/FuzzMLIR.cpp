//===- FuzzMLIR.cpp - libFuzzer target: .mlir files with gdn ops ----------===//
//
// Feeds arbitrary bytes to the MLIR parser with the tools' dialects, runs
// the verifiers, and lowers what verifies and uses only the dialects of a
// gdn module (builtin, func, arith, tensor, gdn) through the first stage of gdn-lower-to-cpu (layer
// decomposition, projection tiling, the chunked delta rule, the recurrence)
// and the CUDA pipeline's first stage (convert-gdn-to-gpu and outlining).
// No input may crash, hang, leak or overflow. The gdn dialect's sources are
// compiled into the target with the sanitizers and coverage; upstream MLIR
// is the prebuilt library.
//
// Lowering cost grows with the static shapes; only modules whose static
// dimensions are all at most kMaxLoweredDim are lowered (larger ones are
// parsed and verified), so that a slow but legal input is not a "hang".
//
//===----------------------------------------------------------------------===//

#include "gdn/InitAllGdn.h"
#include "gdn/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;

static constexpr int64_t kMaxLoweredDim = 64;

/// Whether every static dimension of every tensor in `module` is small.
static bool hasSmallShapes(ModuleOp module) {
  bool small = true;
  module.walk([&](Operation *op) {
    auto check = [&](Type type) {
      if (auto shaped = dyn_cast<ShapedType>(type))
        if (shaped.hasRank())
          for (int64_t size : shaped.getShape())
            if (!ShapedType::isDynamic(size) && size > kMaxLoweredDim)
              small = false;
    };
    for (Type type : op->getResultTypes())
      check(type);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument argument : block.getArguments())
          check(argument.getType());
  });
  return small;
}

static void lower(MLIRContext &context, ModuleOp module,
                  void (*build)(OpPassManager &)) {
  OwningOpRef<ModuleOp> copy = cast<ModuleOp>(module->clone());
  PassManager pm(&context);
  build(pm);
  (void)pm.run(*copy);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // gdn, what the pipelines load on the way (linalg, scf, gpu, ...) and the
  // interface models, as in the tools; which ops may reach the pipelines is
  // decided below.
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry;
    gdn::registerAllGdnDialects(*r);
    return r;
  }();
  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects(false);
  // Diagnostics are the expected outcome of most inputs: dropped.
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) {
    return success();
  });
  // The tools read files into NUL-terminated buffers, which MLIR's lexer
  // relies on; the fuzzer's bytes are copied into one likewise.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "input.mlir"),
      llvm::SMLoc());
  ParserConfig config(&context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module || !hasSmallShapes(*module))
    return 0;
  // Only modules of gdn, func, arith and tensor ops go further: the
  // pipelines are not meant for the rest of upstream MLIR.
  bool gdnOnly = true;
  module->walk([&](Operation *op) {
    StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace()
                                         : StringRef();
    if (!llvm::is_contained({"builtin", "func", "arith", "tensor", "gdn"},
                            dialect))
      gdnOnly = false;
  });
  if (!gdnOnly)
    return 0;
  lower(context, *module, [](OpPassManager &pm) {
    gdn::CPUPipelineOptions options;
    gdn::buildGdnToLinalgPipeline(pm, options);
  });
  lower(context, *module, [](OpPassManager &pm) {
    gdn::CUDAPipelineOptions options;
    gdn::buildGdnToGPUPipeline(pm, options);
  });
  return 0;
}
