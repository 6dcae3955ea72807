//===- UnicodeClasses.cpp - character classes the tokenizer needs ---------===//

#include "UnicodeClasses.h"

#include <utf8proc.h>

namespace gdn::tokenizer {

static constexpr CodePointRange whiteSpace[] = {
    {0x0009, 0x000D}, {0x0020, 0x0020}, {0x0085, 0x0085}, {0x00A0, 0x00A0},
    {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
    {0x205F, 0x205F}, {0x3000, 0x3000}};

llvm::ArrayRef<CodePointRange> whiteSpaceRanges() { return whiteSpace; }

bool isWhiteSpace(uint32_t codePoint) {
  for (const CodePointRange &range : whiteSpace)
    if (codePoint >= range.first && codePoint <= range.last)
      return true;
  return false;
}

bool isWordCharacter(uint32_t codePoint) {
  if (codePoint < 0x80)
    return (codePoint >= '0' && codePoint <= '9') ||
           (codePoint >= 'a' && codePoint <= 'z') ||
           (codePoint >= 'A' && codePoint <= 'Z') || codePoint == '_';
  if (codePoint == 0x200C || codePoint == 0x200D) // Join_Control
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(codePoint))) {
  case UTF8PROC_CATEGORY_LU:
  case UTF8PROC_CATEGORY_LL:
  case UTF8PROC_CATEGORY_LT:
  case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_LO:
  case UTF8PROC_CATEGORY_NL:
  case UTF8PROC_CATEGORY_MN:
  case UTF8PROC_CATEGORY_MC:
  case UTF8PROC_CATEGORY_ME:
  case UTF8PROC_CATEGORY_ND:
  case UTF8PROC_CATEGORY_PC:
    return true;
  default:
    break;
  }
  // Alphabetic also holds the letter symbols of Other_Alphabetic that are
  // not marks: the circled, squared and negative Latin capital letters.
  return (codePoint >= 0x24B6 && codePoint <= 0x24E9) ||
         (codePoint >= 0x1F130 && codePoint <= 0x1F149) ||
         (codePoint >= 0x1F150 && codePoint <= 0x1F169) ||
         (codePoint >= 0x1F170 && codePoint <= 0x1F189);
}

} // namespace gdn::tokenizer
