// File: kafka_config.h
//
// librdkafka properties, set one by one through rd_kafka_conf_set so that a bad name or value is
// reported at once, naming the property: `librdkafka property "foo.bar": No such configuration
// property: "foo.bar"`. Values are never echoed in errors (they may be secrets).
//
// KafkaConfig owns an rd_kafka_conf_t. Clients copy it (`duplicate()`), add the properties they must
// control (idempotence, assignment strategy, commit mode) and their callbacks, and hand the copy to
// rd_kafka_new; the KafkaConfig itself can be reused for any number of clients.
//
// Thread-safety: none; build it on one thread, then share it read-only.
#pragma once

#include "bloomgate/connectors/handles.h"
#include "bloomgate/connectors/kafka_error.h"

#include <map>
#include <optional>
#include <string>

namespace bloomgate::connectors {

class KafkaConfig {
 public:
  KafkaConfig();
  KafkaConfig(const KafkaConfig& other);
  KafkaConfig& operator=(const KafkaConfig& other);
  KafkaConfig(KafkaConfig&&) noexcept = default;
  KafkaConfig& operator=(KafkaConfig&&) noexcept = default;
  ~KafkaConfig() = default;

  // Sets one property. The error names the property; the object is unchanged on error.
  [[nodiscard]] KafkaError set(const std::string& name, const std::string& value);

  // Sets every property, stopping at the first that fails (std::map order, so errors are reproducible).
  [[nodiscard]] KafkaError set_all(const std::map<std::string, std::string>& properties);

  // Fluent form for start-up code: throws KafkaException instead of returning the error.
  KafkaConfig& with(const std::string& name, const std::string& value);

  // The current value of a property, or nothing if it is unknown.
  [[nodiscard]] std::optional<std::string> get(const std::string& name) const;

  // A copy of the underlying conf for rd_kafka_new, which takes ownership of it.
  [[nodiscard]] ConfHandle duplicate() const;

 private:
  ConfHandle conf_;
};

// Sets a property on a raw conf, with the same error text as KafkaConfig::set.
[[nodiscard]] KafkaError set_property(rd_kafka_conf_t* conf, const std::string& name, const std::string& value);

}  // namespace bloomgate::connectors
