// File: json_big_numbers.h
//
// JSON numbers outside what simdjson's DOM parser holds: integers outside the 64-bit range
// (123456789012345678901234567890) and numbers beyond a double (1e400). The DOM parser rejects a whole
// document for one such number (NUMBER_ERROR), wherever it sits; JSON itself has no such limit. These
// helpers let key extraction (key_extractor.cc) accept such documents and still validate all of them:
//   - neutralize_big_numbers() overwrites each such number of a document with "0" and spaces (same
//     length), so the DOM parser then validates everything else of the document as usual;
//   - number_key() gives the key text of the number at a JSON pointer of the original document: the
//     canonical text simdjson writes for a number it holds (as the DOM path keys it), or the number as
//     written for one it does not.
// Internal to app/; one instance per KeyExtractor (its parsers are reused), not thread-safe.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

namespace bloomgate::app::detail {

class JsonBigNumbers {
 public:
  // Overwrites, in data[0, size), every number token that is valid JSON but that simdjson cannot hold.
  // Returns whether it overwrote any. Number tokens that are not valid JSON are left for the parser to reject.
  bool neutralize_big_numbers(char* data, std::size_t size);

  // The key text of the number at `pointer` in the document padded_data[0, size) (padded with
  // SIMDJSON_PADDING bytes), which the DOM parser found valid once its big numbers were neutralized.
  // False when the pointer does not name a number there.
  bool number_key(const char* padded_data, std::size_t size, std::string_view pointer, std::string& key);

 private:
  // The canonical text of the number `token` when simdjson holds it; empty when it does not.
  std::string canonical(std::string_view token);

  simdjson::dom::parser scratch_;
  simdjson::ondemand::parser ondemand_;
};

// RFC 8259's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(std::string_view token) noexcept;

}  // namespace bloomgate::app::detail
