// File: stream_seeds.h
//
// The fixed seeds of the service tests' generated streams, in one place: a run draws the same events every
// time.
#pragma once

#include <cstdint>

namespace bloomgate::app::test_support {

// service_e2e_test.cc
inline constexpr std::uint64_t kClicksSeed = 1001, kOrdersSeed = 2002, kDuplicatesSeed = 3003, kKeyPartsSeed = 4004;
// service_state_test.cc: the kill -9 test's stream, and where its kills fall
inline constexpr std::uint64_t kKillStreamSeed = 5005, kKillSeed = 4004;
// service_operations_test.cc
inline constexpr std::uint64_t kCleanStopSeed = 6006, kSigtermSeed = 7007, kOutageSeed = 9009, kWorkersSeed = 9109;
inline constexpr std::uint64_t kTwoInstancesSeed = 8008, kTwoInstancesKillSeed = 8009;
// service_transactions_test.cc, and kTransactionsSeed + 1 and + 2 for its further streams
inline constexpr std::uint64_t kTransactionsSeed = 7007;
// state_topic_restore_test.cc: the kill -9 test's stream and the scale-out test's
inline constexpr std::uint64_t kStateTopicKillSeed = 11011, kStateTopicScaleSeed = 12012;
// real_kafka_test.cc: one stream per test, kRealKafkaSeed + n
inline constexpr std::uint64_t kRealKafkaSeed = 10010;

}  // namespace bloomgate::app::test_support
