// File: client.h (private)
//
// Creating an rd_kafka_t from a conf, shared by every client class.
#pragma once

#include "bloomgate/connectors/handles.h"

#include <chrono>
#include <limits>

namespace bloomgate::connectors::detail {

// Creates the handle; rd_kafka_new takes the conf only on success. Throws KafkaException naming `what`.
[[nodiscard]] KafkaHandle create_client(rd_kafka_type_t type, ConfHandle conf, const char* what);

// Sets a property the client itself must control; throws KafkaException if librdkafka refuses it.
void require_property(rd_kafka_conf_t* conf, const char* name, const char* value);

// librdkafka takes int milliseconds; negative means "wait forever", which this layer never asks for
// by accident: a negative duration is passed through as -1 on purpose only.
[[nodiscard]] inline int to_timeout_ms(std::chrono::milliseconds timeout) noexcept {
  if (timeout.count() < 0) return -1;
  if (timeout.count() > std::numeric_limits<int>::max()) return std::numeric_limits<int>::max();
  return static_cast<int>(timeout.count());
}

}  // namespace bloomgate::connectors::detail
