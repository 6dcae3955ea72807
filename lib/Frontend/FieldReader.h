//===- FieldReader.h - typed reads of JSON fields with named errors -*- C++ -*-===//
//
// Shared by the model description (ModelConfig.cpp) and Hugging Face
// configurations (HuggingFaceConfig.cpp): every error names the field, the
// expected value and what was found.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_FRONTEND_FIELDREADER_H
#define GDN_LIB_FRONTEND_FIELDREADER_H

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::gdn {
namespace json = llvm::json;
using llvm::Error;
using llvm::StringRef;

inline Error fieldError(const llvm::Twine &field, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 field + ": " + message);
}

/// Reads the fields of one JSON object, checking types and that no unknown
/// field is present.
class FieldReader {
public:
  FieldReader(const json::Object &object, std::string prefix)
      : object(object), prefix(std::move(prefix)) {}

  std::string name(StringRef field) const { return prefix + field.str(); }

  bool has(StringRef field) const { return object.get(field) != nullptr; }

  /// An integer in [minimum, maximum]; the upper bounds (ModelConfig.h)
  /// keep every size product the compiler forms far from overflow.
  llvm::Expected<int64_t> integer(StringRef field, int64_t minimum,
                                  int64_t maximum) {
    known.insert(field);
    const json::Value *value = object.get(field);
    std::string range =
        "an integer in " + std::to_string(minimum) + ".." +
        std::to_string(maximum);
    if (!value)
      return fieldError(name(field), "missing (" + range + ")");
    std::optional<int64_t> number = value->getAsInteger();
    if (!number || *number < minimum || *number > maximum)
      return fieldError(name(field),
                        "expected " + range + ", got " + describe(*value));
    return *number;
  }

  /// A number in [minimum, maximum], bounds chosen so that the value stays
  /// a normal, finite float32 where the compiled code uses it.
  llvm::Expected<double> number(StringRef field, double minimum,
                                double maximum) {
    known.insert(field);
    const json::Value *value = object.get(field);
    std::string range;
    llvm::raw_string_ostream(range)
        << llvm::format("a number in [%g, %g]", minimum, maximum);
    if (!value)
      return fieldError(name(field), "missing (" + range + ")");
    std::optional<double> number = value->getAsNumber();
    if (!number || !(*number >= minimum && *number <= maximum))
      return fieldError(name(field),
                        "expected " + range + ", got " + describe(*value));
    return *number;
  }

  llvm::Expected<bool> boolean(StringRef field) {
    known.insert(field);
    const json::Value *value = object.get(field);
    if (!value)
      return fieldError(name(field), "missing (true or false)");
    std::optional<bool> flag = value->getAsBoolean();
    if (!flag)
      return fieldError(name(field),
                        "expected true or false, got " + describe(*value));
    return *flag;
  }

  llvm::Expected<std::string> choice(StringRef field,
                                     llvm::ArrayRef<StringRef> options) {
    known.insert(field);
    const json::Value *value = object.get(field);
    std::string expected =
        "one of \"" + llvm::join(options, "\", \"") + "\"";
    if (!value)
      return fieldError(name(field), "missing (" + expected + ")");
    std::optional<StringRef> text = value->getAsString();
    if (!text || !llvm::is_contained(options, *text))
      return fieldError(name(field),
                        "expected " + expected + ", got " + describe(*value));
    return text->str();
  }

  const json::Value *raw(StringRef field) {
    known.insert(field);
    return object.get(field);
  }

  /// Fails on the first field that was never read.
  Error rejectUnknown() const {
    for (const auto &entry : object)
      if (!known.contains(entry.first.str()))
        return fieldError(name(entry.first.str()),
                          "unknown field (misspelt?)");
    return Error::success();
  }

  static std::string describe(const json::Value &value) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << value;
    return text;
  }

private:
  const json::Object &object;
  std::string prefix;
  llvm::StringSet<> known;
};

template <typename T>
inline Error assign(T &target, llvm::Expected<T> value) {
  if (!value)
    return value.takeError();
  target = *value;
  return Error::success();
}

} // namespace mlir::gdn

#endif // GDN_LIB_FRONTEND_FIELDREADER_H
