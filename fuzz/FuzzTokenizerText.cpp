//===- FuzzTokenizerText.cpp - fuzz encoding with a Qwen tokenizer --------===//
//
// Every input is text (any bytes) for the tokenizer of the Hugging Face
// fixtures: encode either refuses it (not UTF-8) or gives ids that decode
// again. No input may crash, hang, leak or trip a sanitizer.
//
//===----------------------------------------------------------------------===//

#include "BpeTokenizer.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static auto tokenizer =
      gdn::tokenizer::BpeTokenizer::load(GDN_FUZZ_TOKENIZER_JSON);
  if (!tokenizer)
    abort();
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto ids = (*tokenizer)->encode(text);
  if (!ids) {
    llvm::consumeError(ids.takeError());
    return 0;
  }
  auto decoded = (*tokenizer)->decode(*ids);
  if (!decoded)
    abort(); // ids from encode always decode
  return 0;
}
