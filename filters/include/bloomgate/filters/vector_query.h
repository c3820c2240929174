// File: filters/include/bloomgate/filters/vector_query.h
//
// The process-wide switch of the time-limited filter's AVX-512 query (docs/filters.md, "The vector query
// and its switch"). The environment variable BLOOMGATE_FILTER_VECTOR_QUERY set to `auto`, set empty or
// unset lets every segment that can use the vector query use it where the CPU has AVX-512 F and DQ; `off`
// keeps the scalar query on every CPU, with the same answers: for a CPU whose clock drops under AVX-512
// work, and to compare the two queries on one machine. Read once per process.
#pragma once

#include <string>

namespace bloomgate::filters {

inline constexpr const char* kVectorQueryVariable = "BLOOMGATE_FILTER_VECTOR_QUERY";

// Whether the variable's value (nullptr when unset) allows the vector query. Throws std::invalid_argument
// naming the variable and the value for anything but auto, off or empty.
bool vector_query_allowed(const char* value);

// Whether the CPU has AVX-512 F and DQ with their registers enabled by the OS, and BMI2.
bool cpu_has_vector_query() noexcept;

// Whether this process's segments use the vector query where their shape allows it: the environment
// allows it and the CPU has it. Throws as vector_query_allowed() does; the first call that does not throw
// decides for the rest of the process.
bool vector_query_in_use();

// One line for the service's start-up log: which query runs, and why.
std::string describe_vector_query();

}  // namespace bloomgate::filters
