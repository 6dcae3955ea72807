//===- StageTimer.h - progress lines of long compile stages -----*- C++ -*-===//
//
// A compile of a deep model takes long enough that silence reads as a hang:
// gdn-compile reports each stage that took a second or more on standard
// error, with its time (--quiet turns this off).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_COMPILER_STAGETIMER_H
#define GDN_COMPILER_STAGETIMER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>

namespace mlir::gdn {

/// Times one stage from construction to destruction; a stage of a second or
/// more is reported as "gdn-compile: <stage>: 2.4 s".
class StageTimer {
public:
  StageTimer(bool report, llvm::StringRef stage)
      : report(report), stage(stage.str()),
        start(std::chrono::steady_clock::now()) {}
  StageTimer(const StageTimer &) = delete;
  StageTimer &operator=(const StageTimer &) = delete;
  ~StageTimer() {
    double seconds = elapsedSeconds();
    if (report && seconds >= 1.0)
      llvm::errs() << llvm::formatv("gdn-compile: {0}: {1:f1} s\n", stage,
                                    seconds);
  }

  double elapsedSeconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }

private:
  bool report;
  std::string stage;
  std::chrono::steady_clock::time_point start;
};

} // namespace mlir::gdn

#endif // GDN_COMPILER_STAGETIMER_H
