#include "unicode.h"

namespace rmscore {

Codepoints decode_utf8(const std::string& text) {
  Codepoints out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t c;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {
      c = 0xFFFD;
      n = 1;
    }
    out.push_back(c);
    p += n;
    left -= n;
  }
  return out;
}

bool valid_utf8(const std::string& text) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t c;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) return false;
    p += n;
    left -= n;
  }
  return true;
}

void append_utf8(std::string& out, utf8proc_int32_t c) {
  utf8proc_uint8_t buf[4];
  utf8proc_ssize_t n = utf8proc_encode_char(c, buf);
  out.append(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
}

bool is_whitespace(utf8proc_int32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_python_space(utf8proc_int32_t c) { return is_whitespace(c) || (c >= 0x1C && c <= 0x1F); }

bool is_letter_slow(utf8proc_int32_t c) {
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return false;
  }
}

bool is_number_slow(utf8proc_int32_t c) {
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

}  // namespace rmscore
