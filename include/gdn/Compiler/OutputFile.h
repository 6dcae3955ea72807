//===- OutputFile.h - writing gdn-compile's outputs -------------*- C++ -*-===//
//
// Every file gdn-compile writes goes through these two functions, so that
// one rule holds for all of them:
//  - a regular file (or a path that does not exist yet) is written to a
//    temporary file beside it and renamed into place only when complete, so
//    a failure never leaves a partial output behind;
//  - anything else that exists (a character device such as /dev/null, a
//    FIFO) is written in place and never removed or replaced, since the
//    caller owns it and not its directory entry;
//  - a directory, or a path whose directory cannot be written, is refused.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_COMPILER_OUTPUTFILE_H
#define GDN_COMPILER_OUTPUTFILE_H

#include "mlir/Support/LLVM.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::gdn {

/// Checks, before any long work, that `path` can be written as an output:
/// "-" (standard output, when `allowStdout`), an existing non-directory we
/// may write, or a new file in a writable directory.
llvm::Error checkOutputPath(StringRef path, bool allowStdout);

/// Checks, before any long work, that `path` is a directory we may write
/// into, or can be created as one (its first existing ancestor writable).
llvm::Error checkOutputDirectory(StringRef path);

/// Writes what `print` produces to `path` ("-" is standard output).
llvm::Error writeOutputStream(StringRef path,
                              function_ref<void(raw_ostream &)> print);

/// Makes `path` from a producer that writes a complete file at the path it
/// is given (a linker, a copy); "-" copies the result to standard output.
llvm::Error writeOutputFile(StringRef path,
                            function_ref<llvm::Error(StringRef)> produce);

} // namespace mlir::gdn

#endif // GDN_COMPILER_OUTPUTFILE_H
