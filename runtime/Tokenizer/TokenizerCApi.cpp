//===- TokenizerCApi.cpp - the C API of gdn_tokenizer.h -------------------===//
//
// A thin layer over BpeTokenizer: it checks every argument before use,
// turns llvm::Error into the thread's last-error message, and implements
// the capacity protocol of the header (return the full length, write what
// fits).
//
//===----------------------------------------------------------------------===//

#include "gdn/Runtime/gdn_tokenizer.h"

#include "BpeTokenizer.h"

#include <algorithm>
#include <cstring>
#include <string>

using gdn::tokenizer::BpeTokenizer;

struct gdn_tokenizer {
  std::unique_ptr<BpeTokenizer> impl;
};

namespace {
thread_local std::string lastError;

int64_t fail(std::string message) {
  lastError = std::move(message);
  return -1;
}

int64_t fail(llvm::Error error) {
  return fail(llvm::toString(std::move(error)));
}

/// Checks a (pointer, size) argument pair: the size is not negative, and
/// the pointer is not NULL where there is something to read or write.
bool checkBuffer(const char *function, const void *pointer, int64_t size,
                 const char *pointerName, const char *sizeName) {
  if (size < 0) {
    fail(std::string(function) + ": " + sizeName + " is negative (" +
         std::to_string(size) + ")");
    return false;
  }
  if (!pointer && size > 0) {
    fail(std::string(function) + ": " + pointerName + " is NULL but " +
         sizeName + " is " + std::to_string(size));
    return false;
  }
  return true;
}

bool checkTokenizer(const char *function, const gdn_tokenizer *tokenizer) {
  if (tokenizer)
    return true;
  fail(std::string(function) + ": the tokenizer is NULL");
  return false;
}

/// Copies what fits of `bytes` to `out` and returns the full length.
int64_t copyOut(llvm::StringRef bytes, char *out, int64_t capacity) {
  size_t n = std::min<size_t>(bytes.size(), static_cast<size_t>(capacity));
  if (n)
    std::memcpy(out, bytes.data(), n);
  return static_cast<int64_t>(bytes.size());
}

int64_t decodeInto(const char *function, const gdn_tokenizer *tokenizer,
                   const int64_t *ids, int64_t count, char *text,
                   int64_t capacity, bool repair) {
  if (!checkTokenizer(function, tokenizer) ||
      !checkBuffer(function, ids, count, "ids", "count") ||
      !checkBuffer(function, text, capacity, "the output buffer", "capacity"))
    return -1;
  llvm::ArrayRef<int64_t> tokens(ids, static_cast<size_t>(count));
  llvm::Expected<std::string> result =
      repair ? tokenizer->impl->decode(tokens)
             : tokenizer->impl->decodeBytes(tokens);
  if (!result)
    return fail(std::string(function) + ": " +
                llvm::toString(result.takeError()));
  return copyOut(*result, text, capacity);
}
} // namespace

extern "C" {

gdn_tokenizer *gdn_tokenizer_load(const char *path) {
  if (!path) {
    fail("gdn_tokenizer_load: the path is NULL");
    return nullptr;
  }
  llvm::Expected<std::unique_ptr<BpeTokenizer>> tokenizer =
      BpeTokenizer::load(path);
  if (!tokenizer) {
    fail(tokenizer.takeError());
    return nullptr;
  }
  return new gdn_tokenizer{std::move(*tokenizer)};
}

void gdn_tokenizer_free(gdn_tokenizer *tokenizer) { delete tokenizer; }

const char *gdn_tokenizer_last_error(void) { return lastError.c_str(); }

int64_t gdn_tokenizer_encode(const gdn_tokenizer *tokenizer, const char *text,
                             int64_t length, int64_t *ids, int64_t capacity) {
  const char *function = "gdn_tokenizer_encode";
  if (!checkTokenizer(function, tokenizer) ||
      !checkBuffer(function, text, length, "text", "length") ||
      !checkBuffer(function, ids, capacity, "ids", "capacity"))
    return -1;
  llvm::Expected<std::vector<int64_t>> encoded = tokenizer->impl->encode(
      llvm::StringRef(text, static_cast<size_t>(length)));
  if (!encoded)
    return fail(std::string(function) + ": " +
                llvm::toString(encoded.takeError()));
  size_t n = std::min<size_t>(encoded->size(), static_cast<size_t>(capacity));
  std::copy_n(encoded->begin(), n, ids);
  return static_cast<int64_t>(encoded->size());
}

int64_t gdn_tokenizer_decode(const gdn_tokenizer *tokenizer, const int64_t *ids,
                             int64_t count, char *text, int64_t capacity) {
  return decodeInto("gdn_tokenizer_decode", tokenizer, ids, count, text,
                    capacity, /*repair=*/true);
}

int64_t gdn_tokenizer_decode_bytes(const gdn_tokenizer *tokenizer,
                                   const int64_t *ids, int64_t count,
                                   char *bytes, int64_t capacity) {
  return decodeInto("gdn_tokenizer_decode_bytes", tokenizer, ids, count, bytes,
                    capacity, /*repair=*/false);
}

int64_t gdn_tokenizer_vocab_size(const gdn_tokenizer *tokenizer) {
  if (!checkTokenizer("gdn_tokenizer_vocab_size", tokenizer))
    return -1;
  return tokenizer->impl->vocabSize();
}

int64_t gdn_tokenizer_token_id(const gdn_tokenizer *tokenizer,
                               const char *token) {
  if (!checkTokenizer("gdn_tokenizer_token_id", tokenizer))
    return -1;
  if (!token)
    return fail("gdn_tokenizer_token_id: the token is NULL");
  return tokenizer->impl->tokenId(token).value_or(-1);
}

} // extern "C"
