//===- FuzzTokenizer.cpp - fuzz the tokenizer.json reader -----------------===//
//
// Every input is a tokenizer.json: it is refused with an error, or it loads
// and then encodes and decodes a few strings. No input may crash, hang,
// leak or trip a sanitizer.
//
//===----------------------------------------------------------------------===//

#include "BpeTokenizer.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef json(reinterpret_cast<const char *>(data), size);
  auto tokenizer = gdn::tokenizer::BpeTokenizer::parse(json, "input.json");
  if (!tokenizer) {
    llvm::consumeError(tokenizer.takeError());
    return 0;
  }
  for (llvm::StringRef text :
       {"", "Hello world", "a  b\n\n c", "\xe4\xbd\xa0\xe5\xa5\xbd 123",
        "<|endoftext|>x"}) {
    auto ids = (*tokenizer)->encode(text);
    if (!ids) {
      llvm::consumeError(ids.takeError());
      continue;
    }
    auto decoded = (*tokenizer)->decode(*ids);
    if (!decoded)
      llvm::consumeError(decoded.takeError());
  }
  return 0;
}
