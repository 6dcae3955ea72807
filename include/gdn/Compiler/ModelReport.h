//===- ModelReport.h - gdn-compile --emit=report ----------------*- C++ -*-===//
//
// The cost report of a model description: cache bytes per sequence and the
// FLOPs of token mixing per new token over a sweep of context lengths, per
// layer kind and in total, beside the design document's softmax baseline
// (ModelCosts.h has the formulas). It needs the description only, no
// weights.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_COMPILER_MODELREPORT_H
#define GDN_COMPILER_MODELREPORT_H

#include "gdn/Frontend/ModelConfig.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <vector>

namespace mlir::gdn {

enum class ReportFormat { Text, JSON };

/// 1k, 4k, 16k, 64k, 256k and 1M tokens.
std::vector<int64_t> defaultReportContexts();

void printModelReport(const ModelConfig &config,
                      llvm::ArrayRef<int64_t> contexts, ReportFormat format,
                      llvm::raw_ostream &os);

} // namespace mlir::gdn

#endif // GDN_COMPILER_MODELREPORT_H
