//===- PipelineFlags.h - pipeline options as a tool's own flags -*- C++ -*-===//
//
// gdn-compile offers every option of both pipelines as a flag of its own
// (--<name> for gdn-lower-to-cpu, --cuda-<name> for gdn-lower-to-cuda).
// The pipelines' option structs declare them (Pipelines.h); the flags only
// forward text, so names, parsing, defaults, help and bounds stay the
// pipelines'.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_COMPILER_PIPELINEFLAGS_H
#define GDN_COMPILER_PIPELINEFLAGS_H

#include "gdn/Compiler/Compiler.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::gdn {

class PipelineFlags {
public:
  /// Registers the flags in `category`; construct before parsing the
  /// command line. The options that follow from --emit (C interfaces,
  /// results as out-parameters, managed host buffers) get no flag.
  explicit PipelineFlags(llvm::cl::OptionCategory &category);

  /// Passes the flags given on the command line to the pipelines' options
  /// of `options`; the error names the flag and the value.
  llvm::Error apply(CompileOptions &options) const;

  /// The flags as JSON (flag, pipeline, option, default, help): what the
  /// Python package derives its compile keywords from.
  void printJSON(llvm::raw_ostream &os) const;

private:
  struct Flag {
    /// cl::opt keeps references to its name and help: they live on the
    /// heap, so that moving the entry does not move them.
    std::unique_ptr<std::string> name, help;
    std::unique_ptr<llvm::cl::opt<std::string>> flag;
    std::string pipeline, option, defaultValue;
  };

  template <typename Options>
  void add(const Options &options, llvm::StringRef pipeline,
           llvm::StringRef prefix, llvm::cl::OptionCategory &category);

  std::vector<Flag> flags;
};

} // namespace mlir::gdn

#endif // GDN_COMPILER_PIPELINEFLAGS_H
