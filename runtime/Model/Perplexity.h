//===- Perplexity.h - held-out loss of a compiled model ---------*- C++ -*-===//
//
// The evaluation behind `gdn-model --perplexity FILE`: the tokens are cut
// into consecutive windows of a fixed length, every window is prefilled
// from empty caches (several windows of one length per call), and the loss
// is the mean negative log-likelihood of every token after the first of
// each window. training/train.py evaluates its models the same way, so the
// two figures can be compared.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_RUNTIME_MODEL_PERPLEXITY_H
#define GDN_RUNTIME_MODEL_PERPLEXITY_H

#include "gdn/Runtime/gdn_model.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gdn {

struct PerplexityResult {
  double totalNll = 0;   ///< nats, summed over the predicted tokens
  int64_t predicted = 0; ///< tokens predicted (all but each window's first)
  int64_t windows = 0;
  double seconds = 0; ///< in prefill calls and the log-softmax

  double meanNll() const { return predicted ? totalNll / predicted : 0; }
};

/// Evaluates `ids` in windows of `window` tokens, `batch` windows per
/// prefill; `progress(done, total)` is called after each prefill with the
/// tokens done. A window shorter than 2 tokens (the end) predicts nothing
/// and is left out. False, with `error` set, when a prefill fails or an id
/// is outside the vocabulary.
bool evaluatePerplexity(gdn_model *model, const std::vector<int64_t> &ids,
                        int64_t window, int64_t batch,
                        const std::function<void(int64_t, int64_t)> &progress,
                        PerplexityResult &result, std::string &error);

} // namespace gdn

#endif // GDN_RUNTIME_MODEL_PERPLEXITY_H
