// File: client.cc
#include "client.h"

#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/kafka_error.h"

#include <array>
#include <string>

namespace bloomgate::connectors::detail {

KafkaHandle create_client(rd_kafka_type_t type, ConfHandle conf, const char* what) {
  std::array<char, 512> reason{};
  KafkaHandle handle(rd_kafka_new(type, conf.get(), reason.data(), reason.size()));
  if (handle == nullptr) {
    throw KafkaException(KafkaError::invalid_argument(std::string("cannot create the ") + what + ": " + reason.data()));
  }
  static_cast<void>(conf.release());  // now owned by the handle
  return handle;
}

void require_property(rd_kafka_conf_t* conf, const char* name, const char* value) {
  if (KafkaError error = set_property(conf, name, value); !error.ok()) throw KafkaException(std::move(error));
}

}  // namespace bloomgate::connectors::detail
