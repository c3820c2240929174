// The error value: classification of bare codes and error objects, and the callback guard.
#include "bloomgate/connectors/client_hooks.h"
#include "bloomgate/connectors/kafka_error.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace bloomgate::connectors {
namespace {

TEST(KafkaError, DefaultIsSuccess) {
  const KafkaError error;
  EXPECT_TRUE(error.ok());
  EXPECT_FALSE(error.is_fatal());
  EXPECT_FALSE(error.is_retriable());
  EXPECT_EQ(error.describe(), "no error");
}

TEST(KafkaError, TransientCodesAreRetriable) {
  for (const rd_kafka_resp_err_t code :
       {RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__QUEUE_FULL, RD_KAFKA_RESP_ERR__TIMED_OUT,
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
        RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE}) {
    const KafkaError error(code, "doing something");
    EXPECT_FALSE(error.ok());
    EXPECT_TRUE(error.is_retriable()) << error.describe();
    EXPECT_FALSE(error.is_fatal()) << error.describe();
  }
}

TEST(KafkaError, FencingAndFatalAreFatal) {
  for (const rd_kafka_resp_err_t code :
       {RD_KAFKA_RESP_ERR__FATAL, RD_KAFKA_RESP_ERR__FENCED, RD_KAFKA_RESP_ERR_PRODUCER_FENCED}) {
    const KafkaError error(code, "producing");
    EXPECT_TRUE(error.is_fatal()) << error.describe();
    EXPECT_FALSE(error.is_retriable()) << error.describe();
  }
}

TEST(KafkaError, PermanentCodesAreNeitherFatalNorRetriable) {
  for (const rd_kafka_resp_err_t code : {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR__INVALID_ARG,
                                         RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE}) {
    const KafkaError error(code, "committing");
    EXPECT_FALSE(error.is_fatal()) << error.describe();
    EXPECT_FALSE(error.is_retriable()) << error.describe();
    EXPECT_FALSE(error.requires_abort()) << error.describe();
  }
}

TEST(KafkaError, ErrorObjectKeepsItsOwnClassificationAndIsDestroyed) {
  // rd_kafka_error_new makes a plain error; set_retriable/... are not public, so check the
  // pass-through of code and message and that nullptr means success.
  const KafkaError error =
      KafkaError::from_error_object(rd_kafka_error_new(RD_KAFKA_RESP_ERR__STATE, "bad state %d", 7), "begin");
  EXPECT_EQ(error.code(), RD_KAFKA_RESP_ERR__STATE);
  EXPECT_EQ(error.message(), "begin: bad state 7");
  EXPECT_FALSE(error.is_fatal());
  EXPECT_TRUE(KafkaError::from_error_object(nullptr, "anything").ok());
}

TEST(KafkaError, DescribeNamesCodeAndClass) {
  const KafkaError error(RD_KAFKA_RESP_ERR__QUEUE_FULL, "produce to \"out\"");
  EXPECT_EQ(error.code_name(), "_QUEUE_FULL");
  EXPECT_EQ(error.describe(), "_QUEUE_FULL: produce to \"out\" [retriable]");
}

TEST(KafkaException, CarriesTheError) {
  const KafkaException exception(KafkaError(RD_KAFKA_RESP_ERR__FENCED, "init"));
  EXPECT_EQ(exception.error().code(), RD_KAFKA_RESP_ERR__FENCED);
  EXPECT_NE(std::string(exception.what()).find("[fatal]"), std::string::npos);
}

TEST(KafkaResult, HoldsValueOrError) {
  const KafkaResult<int> value = 3;
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value.value(), 3);
  const KafkaResult<int> error = KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, "metadata");
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.error().code(), RD_KAFKA_RESP_ERR__TIMED_OUT);
}

TEST(CallbackGuard, CatchesCountsAndReportsExceptions) {
  std::vector<std::string> lines;
  ClientHooks hooks;
  hooks.on_log = [&](int level, std::string_view facility, std::string_view message) {
    lines.push_back(std::to_string(level) + " " + std::string(facility) + " " + std::string(message));
  };
  CallbackGuard guard(hooks);
  guard.invoke("delivery report", [] { throw std::runtime_error("boom"); });
  guard.invoke("rebalance", [] { throw 42; });
  EXPECT_EQ(guard.exceptions_caught(), 2U);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(lines[0], "3 CALLBACK exception in the delivery report callback, caught before it reached librdkafka: boom");
  EXPECT_NE(lines[1].find("not derived from std::exception"), std::string::npos);
}

TEST(CallbackGuard, ThrowingLogFunctionFallsBackToStderr) {
  ClientHooks hooks;
  hooks.on_log = [](int, std::string_view, std::string_view) { throw std::runtime_error("log sink down"); };
  CallbackGuard guard(hooks);
  testing::internal::CaptureStderr();
  guard.log(6, "TEST", "a line");                               // the log function throws: caught
  guard.invoke("delivery report", [] { throw std::runtime_error("boom"); });  // reporting throws too
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(guard.exceptions_caught(), 2U);
  EXPECT_NE(err.find("log sink down"), std::string::npos);
  EXPECT_NE(err.find("boom"), std::string::npos);
}

TEST(CallbackGuard, ErrorsGoToTheErrorFunctionOrTheLog) {
  std::vector<std::string> seen;
  ClientHooks with_error_function;
  with_error_function.on_error = [&](const KafkaError& error) { seen.push_back("error " + error.code_name()); };
  CallbackGuard direct(with_error_function);
  direct.error(KafkaError(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "3/3 brokers are down"));

  ClientHooks log_only;
  log_only.on_log = [&](int level, std::string_view facility, std::string_view) {
    seen.push_back("log " + std::to_string(level) + " " + std::string(facility));
  };
  CallbackGuard logged(log_only);
  logged.error(KafkaError(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "3/3 brokers are down"));
  EXPECT_EQ(seen, (std::vector<std::string>{"error _ALL_BROKERS_DOWN", "log 3 ERROR"}));
}

}  // namespace
}  // namespace bloomgate::connectors
