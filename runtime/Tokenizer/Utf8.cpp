//===- Utf8.cpp - UTF-8 validation and repair for the tokenizer -----------===//
//
// Well-formed sequences are those of Unicode table 3-7: the second byte's
// range depends on the first byte, which excludes overlong forms,
// surrogates and code points above U+10FFFF.
//
//===----------------------------------------------------------------------===//

#include "Utf8.h"

namespace gdn::tokenizer {

int decodeUtf8(llvm::StringRef text, uint32_t &codePoint) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  uint8_t lead = byte(0);
  if (lead < 0x80) {
    codePoint = lead;
    return 1;
  }
  int length;
  uint8_t secondLow = 0x80, secondHigh = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    codePoint = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    codePoint = lead & 0x0F;
    if (lead == 0xE0)
      secondLow = 0xA0; // overlong below U+0800
    else if (lead == 0xED)
      secondHigh = 0x9F; // surrogates U+D800..U+DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    codePoint = lead & 0x07;
    if (lead == 0xF0)
      secondLow = 0x90; // overlong below U+10000
    else if (lead == 0xF4)
      secondHigh = 0x8F; // above U+10FFFF
  } else {
    return -1; // a continuation byte, C0, C1 or F5..FF
  }
  for (int i = 1; i < length; ++i) {
    uint8_t low = i == 1 ? secondLow : 0x80;
    uint8_t high = i == 1 ? secondHigh : 0xBF;
    if (static_cast<size_t>(i) >= text.size() || byte(i) < low ||
        byte(i) > high)
      return -i;
    codePoint = (codePoint << 6) | (byte(i) & 0x3F);
  }
  return length;
}

std::optional<size_t> findInvalidUtf8(llvm::StringRef text) {
  size_t i = 0;
  while (i < text.size()) {
    // Runs of ASCII are the common case; skip them without decoding.
    if (static_cast<uint8_t>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    uint32_t codePoint;
    int length = decodeUtf8(text.drop_front(i), codePoint);
    if (length < 0)
      return i;
    i += length;
  }
  return std::nullopt;
}

void appendRepairedUtf8(llvm::StringRef bytes, std::string &out) {
  static constexpr char replacement[] = "\xEF\xBF\xBD";
  size_t i = 0;
  while (i < bytes.size()) {
    size_t start = i;
    while (i < bytes.size() && static_cast<uint8_t>(bytes[i]) < 0x80)
      ++i;
    out.append(bytes.data() + start, i - start);
    if (i == bytes.size())
      break;
    uint32_t codePoint;
    int length = decodeUtf8(bytes.drop_front(i), codePoint);
    if (length > 0) {
      out.append(bytes.data() + i, length);
      i += length;
    } else {
      out.append(replacement, 3);
      i += -length;
    }
  }
}

void appendUtf8(uint32_t codePoint, std::string &out) {
  if (codePoint < 0x80) {
    out.push_back(static_cast<char>(codePoint));
  } else if (codePoint < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (codePoint >> 6)));
    out.push_back(static_cast<char>(0x80 | (codePoint & 0x3F)));
  } else if (codePoint < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (codePoint >> 12)));
    out.push_back(static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (codePoint & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (codePoint >> 18)));
    out.push_back(static_cast<char>(0x80 | ((codePoint >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (codePoint & 0x3F)));
  }
}

} // namespace gdn::tokenizer
