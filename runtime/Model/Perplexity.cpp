//===- Perplexity.cpp - held-out loss of a compiled model -----------------===//

#include "Perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace gdn {

namespace {
/// -log softmax(logits)[target], in double so that a long text's sum
/// keeps its digits.
double negativeLogLikelihood(const float *logits, int64_t vocab,
                             int64_t target) {
  double best = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += std::exp(double(logits[i]) - best);
  return best + std::log(sum) - double(logits[target]);
}
} // namespace

bool evaluatePerplexity(gdn_model *model, const std::vector<int64_t> &ids,
                        int64_t window, int64_t batch,
                        const std::function<void(int64_t, int64_t)> &progress,
                        PerplexityResult &result, std::string &error) {
  auto start = std::chrono::steady_clock::now();
  result = PerplexityResult();
  int64_t vocab = gdn_model_vocab_size(model);
  int64_t total = ids.size();
  // Full windows first, batched; then the shorter last one on its own.
  int64_t fullWindows = total / window;
  int64_t rest = total % window;
  std::vector<int64_t> chunk;
  auto run = [&](int64_t first, int64_t count, int64_t length) {
    chunk.assign(ids.begin() + first, ids.begin() + first + count * length);
    if (gdn_model_prefill(model, chunk.data(), count, length)) {
      error = gdn_model_last_error();
      return false;
    }
    const float *logits = gdn_model_logits(model, nullptr, nullptr);
    if (!logits) {
      error = gdn_model_last_error();
      return false;
    }
    for (int64_t b = 0; b < count; ++b)
      for (int64_t t = 0; t + 1 < length; ++t) {
        int64_t target = chunk[b * length + t + 1];
        if (target < 0 || target >= vocab) {
          error = "token " + std::to_string(first + b * length + t + 1) +
                  " is id " + std::to_string(target) +
                  ", outside the vocabulary of " + std::to_string(vocab);
          return false;
        }
        result.totalNll += negativeLogLikelihood(
            logits + (b * length + t) * vocab, vocab, target);
      }
    result.predicted += count * (length - 1);
    result.windows += count;
    progress(first + count * length, total);
    return true;
  };
  for (int64_t w = 0; w < fullWindows; w += batch)
    if (!run(w * window, std::min(batch, fullWindows - w), window))
      return false;
  if (rest >= 2 && !run(fullWindows * window, 1, rest))
    return false;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return true;
}

} // namespace gdn
