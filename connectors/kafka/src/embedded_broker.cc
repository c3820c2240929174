// File: embedded_broker.cc
#include "bloomgate/connectors/embedded_broker.h"

#include "client.h"

#include <librdkafka/rdkafka_mock.h>

namespace bloomgate::connectors {

void EmbeddedBroker::ClusterDeleter::operator()(rd_kafka_mock_cluster_s* cluster) const noexcept {
  rd_kafka_mock_cluster_destroy(cluster);
}

EmbeddedBroker::EmbeddedBroker(int broker_count, ClientHooks hooks) : guard_(std::move(hooks)) {
  if (broker_count < 1) throw KafkaException(KafkaError::invalid_argument("an embedded cluster needs at least one broker"));
  ConfHandle conf(rd_kafka_conf_new());
  detail::install_guarded_callbacks(conf.get(), &guard_);
  // The hosting handle never connects anywhere; it only runs the mock cluster's thread.
  handle_ = detail::create_client(RD_KAFKA_PRODUCER, std::move(conf), "embedded broker's host client");
  cluster_.reset(rd_kafka_mock_cluster_new(handle_.get(), broker_count));
  if (cluster_ == nullptr) {
    throw KafkaException(KafkaError::invalid_argument("cannot start the embedded Kafka cluster (mock cluster)"));
  }
  broker_count_ = broker_count;
  bootstrap_servers_ = rd_kafka_mock_cluster_bootstraps(cluster_.get());
}

EmbeddedBroker::~EmbeddedBroker() {
  cluster_.reset();  // explicit: the cluster must stop before the handle hosting it is destroyed
  handle_.reset();
}

KafkaError EmbeddedBroker::create_topic(const std::string& name, int partitions, int replication_factor) {
  const rd_kafka_resp_err_t code =
      rd_kafka_mock_topic_create(cluster_.get(), name.c_str(), partitions, replication_factor);
  if (code == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return KafkaError(code, "embedded broker: create topic \"" + name + "\"");
}

KafkaError EmbeddedBroker::set_broker_down(std::int32_t broker_id) {
  const rd_kafka_resp_err_t code = rd_kafka_mock_broker_set_down(cluster_.get(), broker_id);
  if (code == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return KafkaError(code, "embedded broker: set broker " + std::to_string(broker_id) + " down");
}

KafkaError EmbeddedBroker::set_broker_up(std::int32_t broker_id) {
  const rd_kafka_resp_err_t code = rd_kafka_mock_broker_set_up(cluster_.get(), broker_id);
  if (code == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return KafkaError(code, "embedded broker: set broker " + std::to_string(broker_id) + " up");
}

}  // namespace bloomgate::connectors
