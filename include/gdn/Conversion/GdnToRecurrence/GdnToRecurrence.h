//===- GdnToRecurrence.h - gdn to the token recurrence ----------*- C++ -*-===//

#ifndef GDN_CONVERSION_GDNTORECURRENCE_GDNTORECURRENCE_H
#define GDN_CONVERSION_GDNTORECURRENCE_GDNTORECURRENCE_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {

/// Adds patterns that rewrite gdn.delta_rule into an scf.for over tokens of
/// linalg steps and gdn.delta_rule_step into one such step.
void populateGdnToRecurrencePatterns(RewritePatternSet &patterns);

} // namespace mlir::gdn

#endif // GDN_CONVERSION_GDNTORECURRENCE_GDNTORECURRENCE_H
