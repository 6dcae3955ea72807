//===- Normalizer.cpp - Unicode NFC for the tokenizer ---------------------===//

#include "Normalizer.h"

#include <cstdlib>
#include <utf8proc.h>

namespace gdn::tokenizer {

static bool isAscii(llvm::StringRef text) {
  for (char c : text)
    if (static_cast<uint8_t>(c) >= 0x80)
      return false;
  return true;
}

llvm::Error normalizeNfc(llvm::StringRef text, std::string &out) {
  if (isAscii(text)) {
    out.assign(text.data(), text.size());
    return llvm::Error::success();
  }
  // With an explicit length (no UTF8PROC_NULLTERM) embedded NULs are
  // characters like any other.
  utf8proc_uint8_t *normalized = nullptr;
  utf8proc_ssize_t length = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
      static_cast<utf8proc_ssize_t>(text.size()), &normalized,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (length < 0)
    return llvm::createStringError("NFC normalisation failed: %s",
                                   utf8proc_errmsg(length));
  out.assign(reinterpret_cast<const char *>(normalized),
             static_cast<size_t>(length));
  std::free(normalized);
  return llvm::Error::success();
}

} // namespace gdn::tokenizer
