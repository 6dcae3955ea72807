// Calls the C API of a compiled model (gdn_model.h) the way a careless or
// hostile caller would. Built with AddressSanitizer by model-c-api.test, so
// a read past the caller's arrays, a use after free or a double free fails
// the test even where the results look right. Prints one line per check
// and "all checks passed" at the end; exits 1 on the first failure.

#include "gdn_model.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect(int condition, const char *what) {
  printf("%s: %s\n", condition ? "ok" : "FAILED", what);
  if (!condition) {
    printf("  last error: %s\n", gdn_model_last_error());
    failures++;
  }
}

/// A call that must fail with a message containing `needle`.
static void expectError(int status, const char *needle, const char *what) {
  int ok = status == -1 && strstr(gdn_model_last_error(), needle) != NULL;
  expect(ok, what);
  if (!ok)
    printf("  expected an error with '%s'\n", needle);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s WEIGHTS\n", argv[0]);
    return 2;
  }
  // Every entry point takes a NULL model without touching memory.
  expectError((int)gdn_model_vocab_size(NULL), "model is NULL",
              "vocab_size(NULL)");
  expectError((int)gdn_model_max_context(NULL), "NULL", "max_context(NULL)");
  expectError(gdn_model_byte_tokenizer(NULL), "NULL", "byte_tokenizer(NULL)");
  expectError((int)gdn_model_position(NULL), "NULL", "position(NULL)");
  expectError((int)gdn_model_batch(NULL), "NULL", "batch(NULL)");
  expectError((int)gdn_model_cache_bytes(NULL, NULL, NULL), "NULL",
              "cache_bytes(NULL)");
  int64_t batch = 7, tokens = 7;
  expect(gdn_model_logits(NULL, &batch, &tokens) == NULL && batch == 0 &&
             tokens == 0,
         "logits(NULL) is NULL with batch and tokens 0");
  expect(gdn_model_last_logits(NULL, &batch) == NULL && batch == 0,
         "last_logits(NULL) is NULL with batch 0");
  int64_t one[1] = {1};
  expectError(gdn_model_prefill(NULL, one, 1, 1), "NULL", "prefill(NULL)");
  expectError(gdn_model_extend(NULL, one, 1, 1), "NULL", "extend(NULL)");
  expectError(gdn_model_decode(NULL, one), "NULL", "decode(NULL)");
  expectError(gdn_model_set_check_numerics(NULL, 1), "NULL",
              "set_check_numerics(NULL)");
  expectError(gdn_model_set_last_logits_only(NULL, 1), "NULL",
              "set_last_logits_only(NULL)");
  expectError(gdn_model_set_decode_graphs(NULL, 1), "NULL",
              "set_decode_graphs(NULL)");
  int64_t recorded = 7, replayed = 7, updated = 7;
  expectError(
      gdn_model_decode_graph_counts(NULL, &recorded, &replayed, &updated),
      "NULL", "decode_graph_counts(NULL)");
  expect(recorded == 0 && replayed == 0 && updated == 0,
         "decode_graph_counts(NULL) gives zeros");
  gdn_model_free(NULL);

  expect(gdn_model_load("/nonexistent/model.safetensors") == NULL &&
             strstr(gdn_model_last_error(), "cannot read") != NULL,
         "load of a missing file is refused");
  gdn_model *model = gdn_model_load(argv[1]);
  if (!model) {
    printf("FAILED: load: %s\n", gdn_model_last_error());
    return 1;
  }
  int64_t vocab = gdn_model_vocab_size(model);
  int64_t context = gdn_model_max_context(model);

  // Before any prefill there is nothing to continue.
  expectError(gdn_model_extend(model, one, 1, 1), "call gdn_model_prefill",
              "extend before prefill");
  expectError(gdn_model_decode(model, one), "call gdn_model_prefill",
              "decode before prefill");
  expect(gdn_model_logits(model, NULL, NULL) == NULL,
         "no logits before prefill");
  expect(gdn_model_last_logits(model, NULL) == NULL,
         "no last logits before prefill");

  // Sizes are checked before the ids are read: the arrays here hold one id,
  // and AddressSanitizer stops the test on any read past it.
  expectError(gdn_model_prefill(model, one, -1, 1), "batch", "batch -1");
  expectError(gdn_model_prefill(model, one, 0, 1), "batch", "batch 0");
  expectError(gdn_model_prefill(model, one, (int64_t)1 << 40, 1), "batch",
              "batch 2^40");
  expectError(gdn_model_prefill(model, one, 1, 0), "tokens", "tokens 0");
  expectError(gdn_model_prefill(model, one, 1, -5), "tokens", "tokens -5");
  expectError(gdn_model_prefill(model, one, 1, (int64_t)1 << 40), "max_context",
              "tokens 2^40");
  expectError(gdn_model_prefill(model, one, 1, INT64_MAX), "max_context",
              "tokens INT64_MAX");
  expectError(gdn_model_prefill(model, one, 1, context + 1), "max_context",
              "tokens max_context + 1");
  expectError(gdn_model_prefill(model, NULL, 1, 1), "ids is NULL", "ids NULL");
  int64_t bad[2] = {1, vocab};
  expectError(gdn_model_prefill(model, bad, 1, 2), "outside the vocabulary",
              "token id = vocab");
  bad[1] = -1;
  expectError(gdn_model_prefill(model, bad, 1, 2), "outside the vocabulary",
              "token id -1");

  // A good prefill, then failed calls leave the sequences as they were.
  int64_t prompt[6] = {1, 2, 3, 4, 5, 6};
  expect(gdn_model_prefill(model, prompt, 2, 3) == 0, "prefill 2 x 3");
  const float *logits = gdn_model_logits(model, &batch, &tokens);
  expect(logits != NULL && batch == 2 && tokens == 3, "logits [2, 3, vocab]");
  size_t count = (size_t)(batch * tokens * vocab);
  float *saved = malloc(count * sizeof(float));
  memcpy(saved, logits, count * sizeof(float));
  int64_t lastBatch = -1;
  const float *last = gdn_model_last_logits(model, &lastBatch);
  expect(last != NULL && lastBatch == 2 &&
             memcmp(last, saved + 2 * vocab, vocab * sizeof(float)) == 0 &&
             memcmp(last + vocab, saved + 5 * vocab, vocab * sizeof(float)) ==
                 0,
         "last logits: the rows [0, 2] and [1, 2]");
  bad[0] = vocab + 5;
  expectError(gdn_model_prefill(model, bad, 1, 2), "vocabulary",
              "a bad prefill after a good one");
  expectError(gdn_model_decode(model, bad), "vocabulary", "a bad decode");
  expectError(gdn_model_extend(model, prompt, 3, 2), "batch",
              "extend with another batch");
  expectError(gdn_model_extend(model, prompt, 2, context), "max_context",
              "extend past max_context");
  const float *after = gdn_model_logits(model, &batch, &tokens);
  expect(after == logits && batch == 2 && tokens == 3 &&
             memcmp(after, saved, count * sizeof(float)) == 0 &&
             gdn_model_position(model) == 3 && gdn_model_batch(model) == 2,
         "failed calls leave the position, batch and logits unchanged");
  free(saved);

  // Sequences of good calls: decode, extend, a smaller batch, again.
  int64_t next[2] = {7, 8};
  expect(gdn_model_decode(model, next) == 0 && gdn_model_position(model) == 4,
         "decode");
  expect(gdn_model_extend(model, prompt, 2, 2) == 0 &&
             gdn_model_position(model) == 6,
         "extend by 2");
  expect(gdn_model_prefill(model, prompt, 1, 5) == 0 &&
             gdn_model_batch(model) == 1 && gdn_model_position(model) == 5,
         "prefill of a smaller batch");
  expect(gdn_model_decode(model, next) == 0 &&
             gdn_model_decode(model, next) == 0,
         "two decodes");
  expect(gdn_model_decode_graph_counts(model, &recorded, &replayed,
                                       &updated) == 0 &&
             recorded == 0 && replayed == 0 && updated == 0,
         "a CPU build records no decode graphs");
  int64_t gdnBytes = -1, mlaBytes = -1;
  expect(gdn_model_cache_bytes(model, &gdnBytes, &mlaBytes) ==
                 gdnBytes + mlaBytes &&
             gdnBytes >= 0 && mlaBytes >= 0,
         "cache bytes");
  // The numerics check passes on finite weights.
  expect(gdn_model_set_check_numerics(model, 1) == 0 &&
             gdn_model_decode(model, next) == 0,
         "decode with the numerics check");
  gdn_model_set_check_numerics(model, 0);
  // The last position's logits alone: the last row of every position's.
  expect(gdn_model_prefill(model, prompt, 2, 3) == 0, "prefill of 2 x 3");
  const float *all = gdn_model_logits(model, &batch, &tokens);
  float *lastRows = malloc(2 * vocab * sizeof(float));
  for (int64_t b = 0; all && b < 2; ++b)
    memcpy(lastRows + b * vocab, all + (b * 3 + 2) * vocab,
           vocab * sizeof(float));
  expect(gdn_model_set_last_logits_only(model, 1) == 0 &&
             gdn_model_prefill(model, prompt, 2, 3) == 0,
         "prefill with the last logits only");
  const float *lastOnly = gdn_model_logits(model, &batch, &tokens);
  int close = lastOnly && batch == 2 && tokens == 1;
  for (int64_t i = 0; close && i < 2 * vocab; ++i)
    close =
        fabsf(lastOnly[i] - lastRows[i]) <= 1e-4f * (1 + fabsf(lastRows[i]));
  expect(close, "the last logits only equal the last rows of all of them");
  const float *sampled = gdn_model_last_logits(model, &batch);
  expect(sampled && batch == 2 && memcmp(sampled, lastOnly,
                                         2 * vocab * sizeof(float)) == 0,
         "last_logits with the last logits only");
  free(lastRows);
  gdn_model_set_last_logits_only(model, 0);
  // A second model of the same weights, freed first.
  gdn_model *other = gdn_model_load(argv[1]);
  expect(other != NULL && gdn_model_prefill(other, prompt, 1, 1) == 0,
         "a second model");
  gdn_model_free(other);
  expect(gdn_model_decode(model, next) == 0, "the first model after the "
                                             "second is freed");
  gdn_model_free(model);

  if (failures) {
    printf("%d checks failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
