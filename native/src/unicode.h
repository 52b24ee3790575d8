// Unicode helpers the native tokenizers share (code points through utf8proc).
#pragma once

#include <string>
#include <vector>
#include <utf8proc.h>

namespace rmscore {

using Codepoints = std::vector<utf8proc_int32_t>;

// The code points of UTF-8 text; an invalid byte becomes U+FFFD (callers that must refuse
// invalid text check it first with valid_utf8).
Codepoints decode_utf8(const std::string& text);
void append_utf8(std::string& out, utf8proc_int32_t c);
bool valid_utf8(const std::string& text);

// Rust's char::is_whitespace and the regex classes' \s: the Unicode White_Space property.
bool is_whitespace(utf8proc_int32_t c);
// Python's str.isspace (what str.strip() removes): White_Space plus the separators U+001C-U+001F.
bool is_python_space(utf8proc_int32_t c);
bool is_letter_slow(utf8proc_int32_t c);
bool is_number_slow(utf8proc_int32_t c);
// \p{L} and \p{N}; ASCII answered inline (most text), the rest through utf8proc's tables
inline bool is_letter(utf8proc_int32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  return is_letter_slow(c);
}
inline bool is_number(utf8proc_int32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return is_number_slow(c);
}

}  // namespace rmscore
