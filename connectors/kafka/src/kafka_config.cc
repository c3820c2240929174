// File: kafka_config.cc
#include "bloomgate/connectors/kafka_config.h"

#include <array>
#include <cstddef>

namespace bloomgate::connectors {

KafkaError set_property(rd_kafka_conf_t* conf, const std::string& name, const std::string& value) {
  std::array<char, 512> reason{};
  const rd_kafka_conf_res_t result = rd_kafka_conf_set(conf, name.c_str(), value.c_str(), reason.data(), reason.size());
  if (result == RD_KAFKA_CONF_OK) return {};
  // The value is left out on purpose: it may be a password. librdkafka's reason may quote it for an
  // invalid value of an enum property, which is not secret; for strings it never quotes it.
  return KafkaError::invalid_argument("librdkafka property \"" + name + "\": " + reason.data());
}

KafkaConfig::KafkaConfig() : conf_(rd_kafka_conf_new()) {}

KafkaConfig::KafkaConfig(const KafkaConfig& other) : conf_(other.duplicate()) {}

KafkaConfig& KafkaConfig::operator=(const KafkaConfig& other) {
  if (this != &other) conf_ = other.duplicate();
  return *this;
}

KafkaError KafkaConfig::set(const std::string& name, const std::string& value) {
  return set_property(conf_.get(), name, value);
}

KafkaError KafkaConfig::set_all(const std::map<std::string, std::string>& properties) {
  for (const auto& [name, value] : properties) {
    if (KafkaError error = set(name, value); !error.ok()) return error;
  }
  return {};
}

KafkaConfig& KafkaConfig::with(const std::string& name, const std::string& value) {
  if (KafkaError error = set(name, value); !error.ok()) throw KafkaException(std::move(error));
  return *this;
}

std::optional<std::string> KafkaConfig::get(const std::string& name) const {
  std::size_t size = 0;
  if (rd_kafka_conf_get(conf_.get(), name.c_str(), nullptr, &size) != RD_KAFKA_CONF_OK) return std::nullopt;
  std::string value(size, '\0');
  if (rd_kafka_conf_get(conf_.get(), name.c_str(), value.data(), &size) != RD_KAFKA_CONF_OK) return std::nullopt;
  value.resize(size > 0 ? size - 1 : 0);  // size counts the terminating NUL
  return value;
}

ConfHandle KafkaConfig::duplicate() const { return ConfHandle(rd_kafka_conf_dup(conf_.get())); }

}  // namespace bloomgate::connectors
