#include "json_big_numbers.h"

#include <cstring>

namespace bloomgate::app::detail {
namespace {

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

bool is_number_byte(char c) noexcept {
  return is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// Advances `at` past the digits from it; returns how many there were.
std::size_t skip_digits(std::string_view token, std::size_t& at) noexcept {
  const std::size_t start = at;
  while (at < token.size() && is_digit(token[at])) ++at;
  return at - start;
}

// Past the string whose opening quote is at `at`: the index after its closing quote (or `size`).
std::size_t skip_string(const char* data, std::size_t size, std::size_t at) noexcept {
  for (++at; at < size; ++at) {
    if (data[at] == '\\') {
      ++at;
    } else if (data[at] == '"') {
      return at + 1;
    }
  }
  return size;
}

std::string_view trim_trailing_whitespace(std::string_view token) noexcept {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t' || token.back() == '\n' || token.back() == '\r')) {
    token.remove_suffix(1);
  }
  return token;
}

}  // namespace

bool is_json_number(std::string_view token) noexcept {
  std::size_t at = 0;
  if (at < token.size() && token[at] == '-') ++at;
  if (at < token.size() && token[at] == '0') {
    ++at;
  } else if (at >= token.size() || !is_digit(token[at]) || skip_digits(token, at) == 0) {
    return false;
  }
  if (at < token.size() && token[at] == '.') {
    ++at;
    if (skip_digits(token, at) == 0) return false;
  }
  if (at < token.size() && (token[at] == 'e' || token[at] == 'E')) {
    ++at;
    if (at < token.size() && (token[at] == '+' || token[at] == '-')) ++at;
    if (skip_digits(token, at) == 0) return false;
  }
  return at == token.size();
}

std::string JsonBigNumbers::canonical(std::string_view token) {
  simdjson::dom::element number;
  if (scratch_.parse(token.data(), token.size()).get(number) != simdjson::SUCCESS) return {};
  return simdjson::to_string(number);
}

bool JsonBigNumbers::neutralize_big_numbers(char* data, std::size_t size) {
  bool overwrote = false;
  std::size_t at = 0;
  while (at < size) {
    const char c = data[at];
    if (c == '"') {
      at = skip_string(data, size, at);
      continue;
    }
    if (c != '-' && !is_digit(c)) {
      ++at;
      continue;
    }
    std::size_t end = at;
    while (end < size && is_number_byte(data[end])) ++end;
    const std::string_view token(data + at, end - at);
    if (is_json_number(token) && canonical(token).empty()) {
      data[at] = '0';
      std::memset(data + at + 1, ' ', token.size() - 1);
      overwrote = true;
    }
    at = end;
  }
  return overwrote;
}

bool JsonBigNumbers::number_key(const char* padded_data, std::size_t size, std::string_view pointer, std::string& key) {
  simdjson::ondemand::document document;
  if (ondemand_.iterate(padded_data, size, size + simdjson::SIMDJSON_PADDING).get(document) != simdjson::SUCCESS) {
    return false;
  }
  std::string_view token;
  if (pointer.empty()) {
    // A scalar document is not a value in On-Demand; its token is the document's.
    if (document.raw_json_token().get(token) != simdjson::SUCCESS) return false;
  } else {
    simdjson::ondemand::value value;
    if (document.at_pointer(pointer).get(value) != simdjson::SUCCESS) return false;
    simdjson::ondemand::json_type type{};
    if (value.type().get(type) != simdjson::SUCCESS || type != simdjson::ondemand::json_type::number) return false;
    token = value.raw_json_token();
  }
  token = trim_trailing_whitespace(token);
  if (!is_json_number(token)) return false;
  key = canonical(token);
  if (key.empty()) key.assign(token);
  return true;
}

}  // namespace bloomgate::app::detail
