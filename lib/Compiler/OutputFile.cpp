//===- OutputFile.cpp - writing gdn-compile's outputs ---------------------===//

#include "gdn/Compiler/OutputFile.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"

using namespace mlir;
using namespace mlir::gdn;
namespace fs = llvm::sys::fs;

namespace {
enum class OutputKind { Stdout, Replaceable, InPlace };

llvm::Error outputError(StringRef path, const llvm::Twine &reason) {
  return llvm::createStringError("cannot write output '" + path +
                                 "': " + reason);
}

/// The directory a new file at `path` goes into.
std::string directoryOf(StringRef path) {
  StringRef parent = llvm::sys::path::parent_path(path);
  return parent.empty() ? "." : parent.str();
}

/// What kind of output `path` is; `target` is the file a replaceable output
/// is renamed onto (symbolic links resolved, so that the link stays).
llvm::Expected<OutputKind> classify(StringRef path, std::string &target) {
  target = path.str();
  if (path == "-")
    return OutputKind::Stdout;
  fs::file_status status;
  if (std::error_code ec = fs::status(path, status)) {
    if (ec != std::errc::no_such_file_or_directory)
      return outputError(path, ec.message());
    if (!fs::is_directory(directoryOf(path)))
      return outputError(path, "the directory '" + directoryOf(path) +
                               "' does not exist");
    return OutputKind::Replaceable;
  }
  if (fs::is_directory(status))
    return outputError(path, "it is a directory");
  if (!fs::is_regular_file(status))
    return OutputKind::InPlace;
  SmallString<256> real;
  if (!fs::real_path(path, real))
    target = std::string(real);
  return OutputKind::Replaceable;
}

/// Flushes `os` and turns a write error (a full disk, a closed pipe) into
/// an error naming `path`, clearing it so that the stream does not abort.
llvm::Error flushed(StringRef path, llvm::raw_fd_ostream &os) {
  os.flush();
  if (!os.has_error())
    return llvm::Error::success();
  std::error_code ec = os.error();
  os.clear_error();
  return outputError(path, ec.message());
}

/// Copies the file at `from` into the stream `os` (a device, a FIFO or
/// standard output).
llvm::Error copyInto(StringRef path, StringRef from, llvm::raw_fd_ostream &os) {
  auto buffer = llvm::MemoryBuffer::getFile(from, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return outputError(path, buffer.getError().message());
  os << (*buffer)->getBuffer();
  return flushed(path, os);
}

/// Writes through a temporary file beside `target`, renamed onto it when
/// `write` succeeds and removed otherwise.
llvm::Error replaceThroughTemporary(
    StringRef path, StringRef target,
    function_ref<llvm::Error(StringRef, int)> write) {
  SmallString<256> model(target);
  model += ".partial-%%%%%%";
  SmallString<256> temporary;
  int fd;
  if (std::error_code ec = fs::createUniqueFile(model, fd, temporary))
    return outputError(path, ec.message());
  llvm::sys::RemoveFileOnSignal(temporary);
  llvm::scope_exit cleanup([&] {
    fs::remove(temporary);
    llvm::sys::DontRemoveFileOnSignal(temporary);
  });
  if (llvm::Error error = write(temporary, fd))
    return error;
  if (std::error_code ec = fs::rename(temporary, target))
    return outputError(path, ec.message());
  return llvm::Error::success();
}
} // namespace

llvm::Error mlir::gdn::checkOutputPath(StringRef path, bool allowStdout) {
  std::string target;
  llvm::Expected<OutputKind> kind = classify(path, target);
  if (!kind)
    return kind.takeError();
  if (*kind == OutputKind::Stdout)
    return allowStdout ? llvm::Error::success()
                       : outputError(path, "binary output needs a file name");
  if (*kind == OutputKind::InPlace)
    return fs::access(path, fs::AccessMode::Write)
               ? outputError(path, "permission denied")
               : llvm::Error::success();
  // A new file, or a regular file replaced by a rename: both need the
  // directory to be writable.
  std::string directory = directoryOf(target);
  if (fs::access(directory, fs::AccessMode::Write))
    return outputError(path, "the directory '" + directory + "' is not writable");
  return llvm::Error::success();
}

llvm::Error mlir::gdn::checkOutputDirectory(StringRef path) {
  SmallString<256> existing(path);
  while (!existing.empty() && !fs::exists(existing))
    llvm::sys::path::remove_filename(existing);
  if (existing.empty())
    existing = ".";
  auto refuse = [&](const llvm::Twine &reason) {
    return llvm::createStringError("cannot write the output directory '" +
                                   path + "': " + reason);
  };
  if (!fs::is_directory(existing))
    return refuse("'" + existing + "' exists and is not a directory");
  if (fs::access(existing, fs::AccessMode::Write))
    return refuse("'" + existing + "' is not writable");
  return llvm::Error::success();
}

llvm::Error
mlir::gdn::writeOutputStream(StringRef path,
                             function_ref<void(raw_ostream &)> print) {
  std::string target;
  llvm::Expected<OutputKind> kind = classify(path, target);
  if (!kind)
    return kind.takeError();
  auto finish = [&](llvm::raw_fd_ostream &os) {
    print(os);
    return flushed(path, os);
  };
  if (*kind == OutputKind::Stdout)
    return finish(llvm::outs());
  if (*kind == OutputKind::InPlace) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec, fs::OF_None);
    if (ec)
      return outputError(path, ec.message());
    return finish(os);
  }
  return replaceThroughTemporary(path, target,
                                 [&](StringRef, int fd) -> llvm::Error {
                                   llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
                                   return finish(os);
                                 });
}

llvm::Error
mlir::gdn::writeOutputFile(StringRef path,
                           function_ref<llvm::Error(StringRef)> produce) {
  std::string target;
  llvm::Expected<OutputKind> kind = classify(path, target);
  if (!kind)
    return kind.takeError();
  if (*kind == OutputKind::Replaceable)
    return replaceThroughTemporary(path, target,
                                   [&](StringRef temporary, int fd) {
                                     llvm::sys::Process::SafelyCloseFileDescriptor(
                                         fd);
                                     return produce(temporary);
                                   });
  // Standard output or a device: produced in the temporary directory, then
  // copied into it.
  SmallString<256> temporary;
  if (std::error_code ec =
          fs::createTemporaryFile("gdn-output", "", temporary))
    return outputError(path, ec.message());
  llvm::scope_exit cleanup([&] { fs::remove(temporary); });
  if (llvm::Error error = produce(temporary))
    return error;
  if (*kind == OutputKind::Stdout)
    return copyInto(path, temporary, llvm::outs());
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, fs::OF_None);
  if (ec)
    return outputError(path, ec.message());
  return copyInto(path, temporary, os);
}
