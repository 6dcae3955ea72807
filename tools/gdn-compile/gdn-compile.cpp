//===- gdn-compile.cpp - compile gdn modules to code ----------------------===//
//
// A thin driver over lib/Compiler: parses a .mlir file with gdn ops in
// func.func and lowers it stage by stage (--emit) for a target (--target).
//
//===----------------------------------------------------------------------===//

#include "gdn/Compiler/Compiler.h"
#include "gdn/Compiler/ModelInput.h"
#include "gdn/Compiler/ModelReport.h"
#include "gdn/Compiler/OutputFile.h"
#include "gdn/Compiler/PipelineFlags.h"
#include "gdn/Compiler/StageTimer.h"
#include "gdn/InitAllGdn.h"
#include "gdn/Version.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::gdn;
namespace cl = llvm::cl;

/// The options of this tool; --help lists only these (the MLIR and LLVM
/// options are under --help-hidden).
static cl::OptionCategory compileCategory("gdn-compile options");

static cl::opt<std::string>
    inputFilename(cl::cat(compileCategory), cl::Positional,
                  cl::desc("<input .mlir file or model .json>"));
static cl::opt<MatrixDtype> weightsDtype(
    cl::cat(compileCategory), "weights-dtype",
    cl::desc("Element type of a model's weight matrices in the compiled "
             "step"),
    cl::init(MatrixDtype::AsStored),
    cl::values(clEnumValN(MatrixDtype::AsStored, "auto",
                          "as stored: BF16 matrices are read as bf16 and "
                          "widened in registers"),
               clEnumValN(MatrixDtype::F32, "f32",
                          "f32 (BF16 files are widened once, at load)"),
               clEnumValN(MatrixDtype::BF16, "bf16",
                          "bf16 (F32 files are rounded once, at load)")));
static cl::opt<std::string> outputFilename(cl::cat(compileCategory), "o",
                                           cl::desc("Output file"),
                                           cl::value_desc("path"));
static cl::opt<CompileTarget>
    target(cl::cat(compileCategory), "target",
           cl::desc("Machine to compile for"), cl::init(CompileTarget::CPU),
           cl::values(clEnumValN(CompileTarget::CPU, "cpu", "the host CPU"),
                      clEnumValN(CompileTarget::CUDA, "cuda",
                                 "NVIDIA GPUs (sm_90a)")));
static cl::opt<EmitAction> emitAction(
    cl::cat(compileCategory), "emit",
    cl::desc("What to write (stages in lowering order)"),
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
                   "for a model description: validate it (and its weights, "
                   "where there are any), print layers, parameters and "
                   "cache bytes"),
        clEnumValN(EmitAction::ModelReport, "report",
                   "for a model description: cache bytes per sequence and "
                   "token-mixing FLOPs per token from 1k to 1M tokens of "
                   "context, per layer kind, beside softmax attention "
                   "(docs/model-description.md); no weights needed"),
        clEnumValN(EmitAction::Executable, "exe",
                   "an executable that runs func.func @main(); for a model "
                   "description (the default there), the directory -o with "
                   "the model's executable gdn-model, its shared library "
                   "libgdn-model.so (C API of gdn_model.h) and that "
                   "header")));
static cl::opt<std::string> weightsFilename(
    cl::cat(compileCategory), "weights",
    cl::desc("Weights of a model description (default: model.safetensors "
             "beside the .json)"),
    cl::value_desc("path"), cl::init(""));
static cl::opt<ReportFormat>
    reportFormat(cl::cat(compileCategory), "format",
                 cl::desc("Format of --emit=report"),
                 cl::init(ReportFormat::Text),
                 cl::values(clEnumValN(ReportFormat::Text, "text", "tables"),
                            clEnumValN(ReportFormat::JSON, "json",
                                       "the same numbers as JSON")));
static cl::list<int64_t> reportContexts(
    cl::cat(compileCategory), "report-contexts",
    cl::desc("Context lengths (tokens) of --emit=report (default: 1k, 4k, "
             "16k, 64k, 256k, 1M)"),
    cl::CommaSeparated);
static cl::opt<std::string> cpu(cl::cat(compileCategory), "cpu",
                                cl::desc("LLVM CPU name ('native': the host)"),
                                cl::init("native"));

static cl::opt<bool> quiet(
    cl::cat(compileCategory), "quiet",
    cl::desc("No progress lines (otherwise every stage of a second or more "
             "is reported on standard error with its time)"),
    cl::init(false));

static cl::opt<bool> listPipelineOptions(
    cl::cat(compileCategory), "list-pipeline-options",
    cl::desc("Print the pipeline options this tool offers as flags, as JSON "
             "(flag, pipeline, option, default, help), and exit"),
    cl::init(false));

/// An address inside this executable, to locate it on disk.
static void locateExecutable() {}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerAllGdnPasses();
  CompileOptions options;
  PipelineFlags pipelineFlags(compileCategory);
  cl::HideUnrelatedOptions(compileCategory);
  cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { printVersion(os, "gdn-compile"); });
  cl::ParseCommandLineOptions(argc, argv,
                              "gdn-compile: compile gdn modules and model "
                              "descriptions to code\n\n"
                              "  The MLIR and LLVM options (for example "
                              "--mlir-print-ir-after-all) are listed by "
                              "--help-hidden.\n");
  StageTimer total(false, "");

  // Option errors come before any work, without a source location.
  auto optionError = [](const llvm::Twine &message) {
    llvm::errs() << "gdn-compile: error: " << message << "\n";
    return 1;
  };
  if (listPipelineOptions) {
    pipelineFlags.printJSON(llvm::outs());
    return 0;
  }
  if (inputFilename.empty())
    return optionError("no input file: give a .mlir file or a model .json "
                       "(see --help)");
  // Reports print to standard output unless told otherwise.
  bool printsReport = emitAction == EmitAction::ModelSummary ||
                      emitAction == EmitAction::ModelReport;
  if (outputFilename.empty() && printsReport)
    outputFilename = "-";
  if (outputFilename.empty())
    return optionError("no output: give -o <path> (see --help)");
  for (int64_t tokens : reportContexts)
    if (tokens < 1 || tokens > (int64_t(1) << 40))
      return optionError("--report-contexts: " + llvm::Twine(tokens) +
                         " is not a context length (1 to 2^40 tokens)");
  if (llvm::Error error = pipelineFlags.apply(options))
    return optionError(llvm::toString(std::move(error)));
  // Bounds of the pipelines, before any work; the messages start with the
  // option's name, which gdn-compile spells with its prefix.
  if (llvm::Error error = verifyCPUPipelineOptions(options.cpuPipeline))
    return optionError("--" + llvm::toString(std::move(error)));
  if (llvm::Error error = checkCPUName(cpu))
    return optionError(llvm::toString(std::move(error)));
  if (target == CompileTarget::CUDA)
    if (llvm::Error error = verifyCUDAPipelineOptions(options.cudaPipeline))
      return optionError("--cuda-" + llvm::toString(std::move(error)));
  // A Hugging Face checkpoint folder is read through its config.json.
  if (llvm::sys::fs::is_directory(inputFilename)) {
    llvm::SmallString<256> config(inputFilename);
    llvm::sys::path::append(config, "config.json");
    if (!llvm::sys::fs::exists(config))
      return optionError(inputFilename +
                         ": a directory without config.json (give a "
                         "Hugging Face checkpoint folder, a model .json or a "
                         ".mlir file)");
    inputFilename = std::string(config);
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
  if (!printsReport) {
    bool modelDirectory = isModel && emitAction == EmitAction::Executable;
    llvm::Error unwritable =
        modelDirectory ? checkOutputDirectory(outputFilename)
                       : checkOutputPath(outputFilename, !binaryOutput);
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
  if (isModel && printsReport) {
    // The description alone is enough; weights are validated where there
    // are any (or where --weights names them).
    llvm::Expected<ModelConfig> config = parseModelConfig(input->getBuffer());
    if (!config)
      return optionError(inputFilename + ": " +
                         llvm::toString(config.takeError()));
    std::string output;
    llvm::raw_string_ostream os(output);
    if (emitAction == EmitAction::ModelReport) {
      std::vector<int64_t> contexts(reportContexts.begin(),
                                    reportContexts.end());
      if (contexts.empty())
        contexts = defaultReportContexts();
      printModelReport(*config, contexts, reportFormat, os);
    } else if (weightsFilename.empty() &&
               !WeightFiles::existAt(weightsPathOf(inputFilename, *config))) {
      printConfigSummary(*config, os);
      os << "weights: none at " << weightsPathOf(inputFilename, *config)
         << " (the description alone was checked)\n";
    } else {
      llvm::Expected<ModelInput> model = loadModelInput(
          inputFilename, input->getBuffer(), weightsFilename, weightsDtype);
      if (!model)
        return optionError(llvm::toString(model.takeError()));
      printModelSummary(*model, os);
    }
    if (llvm::Error error = writeOutputStream(
            outputFilename, [&](llvm::raw_ostream &out) { out << output; }))
      return optionError(llvm::toString(std::move(error)));
    return 0;
  }
  if (isModel) {
    // A model description and its weights: validated, then the model's
    // graph is built as gdn IR.
    StageTimer timer(!quiet, "reading the model and its weights");
    llvm::Expected<ModelInput> model = loadModelInput(
        inputFilename, input->getBuffer(), weightsFilename, weightsDtype);
    if (!model)
      return optionError(llvm::toString(model.takeError()));
    // The model directory's runtime calls only the step; a shared library
    // also exports the prefill from scratch (docs/model-description.md).
    ModelFunctions functions;
    functions.withPrefill = emitAction != EmitAction::Executable;
    functions.layerFunctions = target != CompileTarget::CUDA;
    auto built = buildModelModule(&context, *model, functions);
    if (failed(built))
      return 1;
    module = std::move(*built);
  } else {
    if (printsReport)
      return optionError("--emit=summary and --emit=report need a model "
                         "description (.json)");
    sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return 1;
  }

  options.target = target;
  options.emit = emitAction;
  options.outputPath = outputFilename;
  options.cpu = cpu;
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
  options.builtinsLibrary = underPrefix({"lib", "libgdn_builtins.a"});
  options.model = isModel;
  options.modelRuntimeLibrary = underPrefix({"lib", "libgdn_model_runtime.a"});
  options.modelCudaRuntimeLibrary =
      underPrefix({"lib", "libgdn_model_runtime_cuda.a"});
  options.modelDescriptionLibrary =
      underPrefix({"lib", "libGdnModelDescription.a"});
  options.modelMainLibrary = underPrefix({"lib", "libgdn_model_main.a"});
  options.modelTokenizerLibraries = {
      underPrefix({"lib", "libgdn_tokenizer_runtime.a"}),
      underPrefix({"lib", "libpcre2-8.a"}),
      underPrefix({"lib", "libutf8proc.a"})};
  options.modelHeader =
      underPrefix({"include", "gdn", "Runtime", "gdn_model.h"});
  options.progress = !quiet;
#ifdef GDN_SANITIZE
  // This build's runtime archives are instrumented (GDN_SANITIZE in
  // CMakeLists.txt): what links them needs the sanitizer runtime.
  options.runtimeLinkFlags = {"-fsanitize=" GDN_SANITIZE,
                              "-fno-sanitize=vptr,function", "-shared-libasan",
                              "-Wl,-rpath," GDN_SANITIZER_RUNTIME_DIR};
#endif
  if (failed(compileModule(*module, options)))
    return 1;
  double seconds = total.elapsedSeconds();
  if (!quiet && seconds >= 1.0)
    llvm::errs() << llvm::formatv("gdn-compile: wrote {0} in {1:f1} s\n",
                                  outputFilename, seconds);
  return 0;
}
