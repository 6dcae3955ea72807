//===- gdn-compile.cpp - compile gdn modules to code ----------------------===//
//
// A thin driver over lib/Compiler: parses a .mlir file with gdn ops in
// func.func and lowers it stage by stage (--emit) for a target (--target).
//
//===----------------------------------------------------------------------===//

#include "gdn/Compiler/Compiler.h"
#include "gdn/InitAllGdn.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::gdn;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<input .mlir file>"),
                                          cl::Required);
static cl::opt<std::string> outputFilename("o", cl::desc("Output file"),
                                           cl::value_desc("path"),
                                           cl::Required);
static cl::opt<CompileTarget> target(
    "target", cl::desc("Machine to compile for"), cl::init(CompileTarget::CPU),
    cl::values(clEnumValN(CompileTarget::CPU, "cpu", "the host CPU"),
               clEnumValN(CompileTarget::CUDA, "cuda",
                          "NVIDIA GPUs (sm_90a)")));
static cl::opt<EmitAction> emitAction(
    "emit", cl::desc("What to write (stages in lowering order)"),
    cl::init(EmitAction::SharedLibrary),
    cl::values(
        clEnumValN(EmitAction::MLIR, "mlir", "the parsed, verified input"),
        clEnumValN(EmitAction::MLIRLinalg, "mlir-linalg",
                   "MLIR after gdn ops are lowered to linalg on tensors"),
        clEnumValN(EmitAction::MLIRLLVM, "mlir-llvm",
                   "MLIR in the LLVM dialect"),
        clEnumValN(EmitAction::LLVMIR, "llvm", "optimized LLVM IR"),
        clEnumValN(EmitAction::Object, "obj", "an object file"),
        clEnumValN(EmitAction::SharedLibrary, "shared",
                   "a shared library: every public function is exported as "
                   "_mlir_ciface_<name> (docs/c-abi.md)"),
        clEnumValN(EmitAction::Executable, "exe",
                   "an executable that runs func.func @main()")));
static cl::opt<int64_t> chunkSize("chunk-size",
                                  cl::desc("Tokens per chunk of the chunked "
                                           "gdn.delta_rule"),
                                  cl::init(64));
static cl::opt<DeltaRuleForm> deltaRuleForm(
    "delta-rule-form", cl::desc("How gdn.delta_rule is computed"),
    cl::init(DeltaRuleForm::Chunked),
    cl::values(clEnumValN(DeltaRuleForm::Chunked, "chunked",
                          "chunkwise parallel"),
               clEnumValN(DeltaRuleForm::Recurrent, "recurrent",
                          "token by token (reference)")));
static cl::opt<int64_t> recurrentBelow(
    "recurrent-below",
    cl::desc("Prefills shorter than this many tokens run the token "
             "recurrence instead of chunks (chosen at run time)"),
    cl::init(64));
static cl::opt<int64_t> numThreads(
    "num-threads", cl::desc("OpenMP threads (0: OMP_NUM_THREADS or all cores)"),
    cl::init(0));
static cl::opt<std::string> cudaChip(
    "cuda-chip", cl::desc("GPU architecture for --target=cuda"),
    cl::init("sm_90a"));
static cl::opt<std::string> cudaBinaryFormat(
    "cuda-binary-format",
    cl::desc("Kernel binary for --target=cuda: fatbin, bin or isa (PTX, no "
             "ptxas needed)"),
    cl::init("fatbin"));
static cl::opt<int64_t> cudaKeySplits(
    "cuda-key-splits",
    cl::desc("Threads sharing one state column in the CUDA recurrence "
             "kernels"),
    cl::init(2));
static cl::opt<std::string> cpu("cpu",
                                cl::desc("LLVM CPU name ('native': the host)"),
                                cl::init("native"));

/// An address inside this executable, to locate it on disk.
static void locateExecutable() {}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerAllGdnPasses();
  cl::ParseCommandLineOptions(argc, argv,
                              "gdn-compile: compile gdn modules to code\n");

  // Option errors come before any work, without a source location.
  auto optionError = [](const llvm::Twine &message) {
    llvm::errs() << "gdn-compile: error: " << message << "\n";
    return 1;
  };
  if (chunkSize < 1)
    return optionError("--chunk-size must be positive, but got " +
                       llvm::Twine(chunkSize));
  if (recurrentBelow < 0)
    return optionError("--recurrent-below must be 0 (off) or positive, but "
                       "got " +
                       llvm::Twine(recurrentBelow));
  if (numThreads < 0)
    return optionError("--num-threads must be 0 (runtime default) or "
                       "positive, but got " +
                       llvm::Twine(numThreads));
  bool binaryOutput = emitAction == EmitAction::Object ||
                      emitAction == EmitAction::SharedLibrary ||
                      emitAction == EmitAction::Executable;
  if (binaryOutput && outputFilename == "-")
    return optionError("-o - (standard output) is only for the text stages "
                       "(mlir, mlir-linalg, mlir-llvm, llvm); give a file "
                       "name for obj, shared and exe");

  DialectRegistry registry;
  registerAllGdnDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at the source location; the whole module is not
  // dumped along with them (-mlir-print-op-on-diagnostic turns it back on).
  context.printOpOnDiagnostic(false);

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "gdn-compile: cannot read '" << inputFilename
                 << "': " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  CompileOptions options;
  options.target = target;
  options.emit = emitAction;
  options.outputPath = outputFilename;
  options.cpu = cpu;
  options.chunkSize = chunkSize;
  options.deltaRuleForm = deltaRuleForm;
  options.numThreads = numThreads;
  options.recurrentBelow = recurrentBelow;
  options.cudaChip = cudaChip;
  options.cudaBinaryFormat = cudaBinaryFormat;
  options.cudaKeySplits = cudaKeySplits;
  // The CUDA runtime archive sits in the build (or install) tree's lib/.
  std::string executable = llvm::sys::fs::getMainExecutable(
      argv[0], reinterpret_cast<void *>(&locateExecutable));
  llvm::SmallString<256> runtime(llvm::sys::path::parent_path(
      llvm::sys::path::parent_path(executable)));
  llvm::sys::path::append(runtime, "lib", "libgdn_cuda_runtime.a");
  options.cudaRuntimeLibrary = std::string(runtime);
  return failed(compileModule(*module, options)) ? 1 : 0;
}
