//===- gdn-compile.cpp - compile gdn modules to code ----------------------===//
//
// A thin driver over lib/Compiler: parses a .mlir file with gdn ops in
// func.func and lowers it stage by stage (--emit) for a target (--target).
//
//===----------------------------------------------------------------------===//

#include "gdn/Compiler/Compiler.h"
#include "gdn/Compiler/OutputFile.h"
#include "gdn/Dialect/Gdn/Transforms/Transforms.h"
#include "gdn/Frontend/ModelGraph.h"
#include "gdn/Frontend/Safetensors.h"
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

/// The options of this tool; --help lists only these (the MLIR and LLVM
/// options are under --help-hidden).
static cl::OptionCategory compileCategory("gdn-compile options");

static cl::opt<std::string> inputFilename(cl::cat(compileCategory), cl::Positional,
                                          cl::desc("<input .mlir file or model .json>"),
                                          cl::Required);
static cl::opt<std::string> outputFilename(cl::cat(compileCategory), "o", cl::desc("Output file"),
                                           cl::value_desc("path"),
                                           cl::Required);
static cl::opt<CompileTarget> target(cl::cat(compileCategory), 
    "target", cl::desc("Machine to compile for"), cl::init(CompileTarget::CPU),
    cl::values(clEnumValN(CompileTarget::CPU, "cpu", "the host CPU"),
               clEnumValN(CompileTarget::CUDA, "cuda",
                          "NVIDIA GPUs (sm_90a)")));
static cl::opt<EmitAction> emitAction(cl::cat(compileCategory), 
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
        clEnumValN(EmitAction::ModelSummary, "summary",
                   "for a model description: validate it and its weights, "
                   "print layers, parameters and cache bytes"),
        clEnumValN(EmitAction::Executable, "exe",
                   "an executable that runs func.func @main(); for a model "
                   "description (the default there), the directory -o with "
                   "the model's executable gdn-model, its shared library "
                   "libgdn-model.so (C API of gdn_model.h) and that "
                   "header")));
static cl::opt<std::string> weightsFilename(cl::cat(compileCategory), 
    "weights",
    cl::desc("Weights of a model description (default: model.safetensors "
             "beside the .json)"),
    cl::value_desc("path"), cl::init(""));
static cl::opt<int64_t> chunkSize(cl::cat(compileCategory), "chunk-size",
                                  cl::desc("Tokens per chunk of the chunked "
                                           "gdn.delta_rule"),
                                  cl::init(64));
static cl::opt<DeltaRuleForm> deltaRuleForm(cl::cat(compileCategory), 
    "delta-rule-form", cl::desc("How gdn.delta_rule is computed"),
    cl::init(DeltaRuleForm::Chunked),
    cl::values(clEnumValN(DeltaRuleForm::Chunked, "chunked",
                          "chunkwise parallel"),
               clEnumValN(DeltaRuleForm::Recurrent, "recurrent",
                          "token by token (reference)")));
static cl::opt<int64_t> recurrentBelow(cl::cat(compileCategory), 
    "recurrent-below",
    cl::desc("Prefills shorter than this many tokens run the token "
             "recurrence instead of chunks (chosen at run time)"),
    cl::init(64));
static cl::opt<int64_t> numThreads(cl::cat(compileCategory), 
    "num-threads", cl::desc("OpenMP threads (0: OMP_NUM_THREADS or all cores)"),
    cl::init(0));
static cl::opt<std::string> cudaChip(cl::cat(compileCategory), 
    "cuda-chip", cl::desc("GPU architecture for --target=cuda"),
    cl::init("sm_90a"));
static cl::opt<std::string> cudaBinaryFormat(cl::cat(compileCategory), 
    "cuda-binary-format",
    cl::desc("Kernel binary for --target=cuda: fatbin, bin or isa (PTX, no "
             "ptxas needed)"),
    cl::init("fatbin"));
static cl::opt<int64_t> cudaKeySplits(cl::cat(compileCategory), 
    "cuda-key-splits",
    cl::desc("Threads sharing one state column in the CUDA recurrence "
             "kernels"),
    cl::init(2));
static cl::opt<bool> cudaChunkedPrefill(cl::cat(compileCategory), 
    "cuda-chunked-prefill",
    cl::desc("--target=cuda: bf16/f16 prefill as the chunked scan on tensor "
             "cores (=false: the token recurrence)"),
    cl::init(true));
static cl::opt<int64_t> cudaValueTile(cl::cat(compileCategory), 
    "cuda-value-tile",
    cl::desc("--target=cuda: state columns per block of the chunked scan"),
    cl::init(64));
static cl::opt<int64_t> cudaScanWarps(cl::cat(compileCategory), 
    "cuda-scan-warps",
    cl::desc("--target=cuda: warps per block of the chunked scan (4 or 8)"),
    cl::init(4));
static cl::opt<int64_t> cudaMultiprocessors(cl::cat(compileCategory), 
    "cuda-multiprocessors",
    cl::desc("--target=cuda: streaming multiprocessors of the GPU (132 for "
             "H100/H200 SXM); the chunked scan narrows its tiles to fill "
             "them"),
    cl::init(132));
static cl::opt<std::string> cpu(cl::cat(compileCategory), "cpu",
                                cl::desc("LLVM CPU name ('native': the host)"),
                                cl::init("native"));

/// Layers, parameters and the cache per sequence at the maximum context.
static void printModelSummary(const ModelConfig &config,
                              const SafetensorsFile &file,
                              llvm::raw_ostream &os) {
  int64_t parameters = 0;
  for (const auto &entry : file.tensors()) {
    int64_t count = 1;
    for (int64_t size : entry.second.shape)
      count *= size;
    parameters += count;
  }
  int64_t gdnLayers = llvm::count(config.layers, LayerKind::GDN);
  int64_t mlaLayers = config.layers.size() - gdnLayers;
  os << "model: " << config.numLayers << " layers (" << gdnLayers << " GDN, "
     << mlaLayers << " MLA), d_model " << config.dModel << ", vocab "
     << config.vocabSize << ", " << parameters << " parameters\n";
  os << "layers:";
  for (LayerKind kind : config.layers)
    os << (kind == LayerKind::GDN ? " gdn" : " mla");
  os << "\n";
  int64_t gdnBytes = 0, mlaBytesPerToken = 0;
  if (config.gdn) {
    const GdnSettings &g = *config.gdn;
    gdnBytes = (g.numHeads * g.headDim * g.headDim +
                3 * (g.convSize - 1) * g.numHeads * g.headDim) *
               4 * gdnLayers;
  }
  if (config.mla)
    mlaBytesPerToken =
        (config.mla->kvLoraRank + config.mla->qkRopeHeadDim) * 4 * mlaLayers;
  os << "cache per sequence: GDN " << gdnBytes
     << " bytes (constant), MLA " << mlaBytesPerToken
     << " bytes per token (" << mlaBytesPerToken * config.maxContext
     << " at max_context " << config.maxContext << ")\n";
  os << "weights: " << file.path() << " valid\n";
}

/// An address inside this executable, to locate it on disk.
static void locateExecutable() {}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerAllGdnPasses();
  cl::HideUnrelatedOptions(compileCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "gdn-compile: compile gdn modules and model "
                              "descriptions to code\n\n"
                              "  The MLIR and LLVM options (for example "
                              "--mlir-print-ir-after-all) are listed by "
                              "--help-hidden.\n");

  // Option errors come before any work, without a source location.
  auto optionError = [](const llvm::Twine &message) {
    llvm::errs() << "gdn-compile: error: " << message << "\n";
    return 1;
  };
  if (chunkSize < 1)
    return optionError("--chunk-size must be positive, but got " +
                       llvm::Twine(chunkSize));
  if (chunkSize > kMaxChunkSize)
    return optionError("--chunk-size must be at most " +
                       llvm::Twine(kMaxChunkSize) + ", but got " +
                       llvm::Twine(chunkSize));
  if (recurrentBelow < 0)
    return optionError("--recurrent-below must be 0 (off) or positive, but "
                       "got " +
                       llvm::Twine(recurrentBelow));
  if (numThreads < 0)
    return optionError("--num-threads must be 0 (runtime default) or "
                       "positive, but got " +
                       llvm::Twine(numThreads));
  if (llvm::Error error = checkCPUName(cpu))
    return optionError(llvm::toString(std::move(error)));
  if (target == CompileTarget::CUDA) {
    CUDAPipelineOptions cudaOptions;
    cudaOptions.chip = cudaChip;
    cudaOptions.binaryFormat = cudaBinaryFormat;
    // The pipeline's option names, as gdn-compile spells them.
    if (llvm::Error error = verifyCUDAPipelineOptions(cudaOptions))
      return optionError("--cuda-" + llvm::toString(std::move(error)));
  }
  bool isModel = llvm::StringRef(inputFilename).ends_with(".json");
  // A model description compiles to its directory unless told otherwise.
  if (isModel && emitAction.getNumOccurrences() == 0)
    emitAction = EmitAction::Executable;
  bool binaryOutput = emitAction == EmitAction::Object ||
                      emitAction == EmitAction::SharedLibrary ||
                      emitAction == EmitAction::Executable;
  if (binaryOutput && outputFilename == "-")
    return optionError("-o - (standard output) is only for the text stages "
                       "(mlir, mlir-linalg, mlir-llvm, llvm); give a file "
                       "name for obj, shared and exe");

  if (isModel && emitAction == EmitAction::Executable &&
      llvm::sys::fs::exists(outputFilename) &&
      !llvm::sys::fs::is_directory(outputFilename))
    return optionError("-o " + outputFilename +
                       ": exists and is not a directory (a model description "
                       "compiles to a directory with its executable, "
                       "library and header)");

  // An output that cannot be written is reported before any work, not
  // after a compile of a minute.
  if (emitAction != EmitAction::ModelSummary) {
    bool modelDirectory = isModel && emitAction == EmitAction::Executable;
    llvm::Error unwritable = modelDirectory
                                 ? checkOutputDirectory(outputFilename)
                                 : checkOutputPath(outputFilename,
                                                   !binaryOutput);
    if (unwritable)
      return optionError(llvm::toString(std::move(unwritable)));
  }

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
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module;
  if (isModel) {
    // A model description and its weights: validated, then the model's
    // prefill graph is built as gdn IR.
    llvm::Expected<ModelConfig> config = parseModelConfig(input->getBuffer());
    if (!config)
      return optionError(inputFilename + ": " +
                         llvm::toString(config.takeError()));
    std::string weights = weightsFilename;
    if (weights.empty()) {
      llvm::SmallString<256> path(llvm::sys::path::parent_path(inputFilename));
      llvm::sys::path::append(path, "model.safetensors");
      weights = std::string(path);
    }
    llvm::Expected<SafetensorsFile> file = SafetensorsFile::open(weights);
    if (!file)
      return optionError(llvm::toString(file.takeError()));
    if (llvm::Error e = validateWeights(*config, *file))
      return optionError(llvm::toString(std::move(e)));
    if (emitAction == EmitAction::ModelSummary) {
      printModelSummary(*config, *file, llvm::outs());
      return 0;
    }
    auto built = buildModelPrefill(
        &context, *config, FileLineColLoc::get(&context, inputFilename, 1, 1));
    if (failed(built))
      return 1;
    module = std::move(*built);
    llvm::SmallString<256> absoluteWeights(weights);
    llvm::sys::fs::make_absolute(absoluteWeights);
    embedModelStrings(*module, input->getBuffer(), absoluteWeights);
  } else {
    if (emitAction == EmitAction::ModelSummary)
      return optionError("--emit=summary needs a model description (.json)");
    sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return 1;
  }

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
  options.cudaChunkedPrefill = cudaChunkedPrefill;
  options.cudaValueTile = cudaValueTile;
  options.cudaScanWarps = cudaScanWarps;
  options.cudaMultiprocessors = cudaMultiprocessors;
  // The CUDA runtime archive sits in the build (or install) tree's lib/.
  std::string executable = llvm::sys::fs::getMainExecutable(
      argv[0], reinterpret_cast<void *>(&locateExecutable));
  llvm::StringRef prefix =
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(executable));
  auto underPrefix = [&](std::initializer_list<llvm::StringRef> parts) {
    llvm::SmallString<256> path(prefix);
    for (llvm::StringRef part : parts)
      llvm::sys::path::append(path, part);
    return std::string(path);
  };
  options.cudaRuntimeLibrary = underPrefix({"lib", "libgdn_cuda_runtime.a"});
  options.cpuRuntimeLibrary = underPrefix({"lib", "libgdn_cpu_runtime.a"});
  options.model = isModel;
  options.modelRuntimeLibrary = underPrefix({"lib", "libgdn_model_runtime.a"});
  options.modelDescriptionLibrary =
      underPrefix({"lib", "libGdnModelDescription.a"});
  options.modelMainLibrary = underPrefix({"lib", "libgdn_model_main.a"});
  options.modelHeader =
      underPrefix({"include", "gdn", "Runtime", "gdn_model.h"});
  return failed(compileModule(*module, options)) ? 1 : 0;
}
