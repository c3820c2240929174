// File: bench/json_writer.h
//
// The benchmarks' JSON output (filter_bench, service_bench, state_bench, burst_bench), written by hand
// because the figures are flat and a JSON library is not among the project's dependencies. A figure that
// is not a finite number is written as null, so a report generator can tell "not measured" from zero.
// Thread-safety: none.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace bloomgate::bench {

class Json {
 public:
  void open(const char* key, char bracket) {
    comma();
    if (key != nullptr) out_ << '"' << key << "\":";
    out_ << bracket;
    first_ = true;
  }
  void close(char bracket) {
    out_ << bracket;
    first_ = false;
  }
  // key == nullptr: an element of an array.
  void num(const char* key, double v) {
    comma();
    if (key != nullptr) out_ << '"' << key << "\":";
    if (std::isfinite(v)) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      out_ << buf;
    } else {
      out_ << "null";
    }
  }
  void u64(const char* key, std::uint64_t v) {
    comma();
    out_ << '"' << key << "\":" << v;
  }
  void str(const char* key, const std::string& v) {
    comma();
    out_ << '"' << key << "\":\"";
    for (char c : v) {
      if (c == '"' || c == '\\') out_ << '\\';
      if (static_cast<unsigned char>(c) >= 0x20) out_ << c;
    }
    out_ << '"';
  }
  void boolean(const char* key, bool v) {
    comma();
    out_ << '"' << key << "\":" << (v ? "true" : "false");
  }
  // One element of a "targets" array: what was measured against its limit, and the verdict.
  void target(const std::string& name, double reached, double limit, const char* result) {
    open(nullptr, '{');
    str("target", name);
    num("reached", reached);
    num("limit", limit);
    str("result", result);
    close('}');
  }
  std::string text() const { return out_.str(); }

 private:
  void comma() {
    if (!first_) out_ << ',';
    first_ = false;
  }
  std::ostringstream out_;
  bool first_ = true;
};

// Writes `text` to `path`; says so on stderr, naming `program`, and returns false when it cannot.
inline bool write_json_file(const std::string& path, const std::string& text, const char* program) {
  std::ofstream out(path);
  out << text;
  if (!out) std::fprintf(stderr, "%s: cannot write %s\n", program, path.c_str());
  return static_cast<bool>(out);
}

}  // namespace bloomgate::bench
