#include "schema_waits.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace bloomgate::app {
namespace {

constexpr std::chrono::seconds kSeekTimeout{5};

}  // namespace

connectors::KafkaError SchemaWaits::hold(connectors::Consumer& consumer, const connectors::ConsumedMessage& message,
                                         std::uint32_t schema_id) {
  connectors::TopicPartition partition{std::string(message.topic()), message.partition(), message.offset(), {}, {}};
  if (connectors::KafkaError error = consumer.pause({partition}); !error.ok()) return error;
  if (connectors::KafkaError error = consumer.seek({partition}, kSeekTimeout); !error.ok()) return error;
  const auto same = [&](const Wait& wait) { return wait.partition == partition; };
  waits_.erase(std::remove_if(waits_.begin(), waits_.end(), same), waits_.end());
  waits_.push_back({partition, schema_id});
  spdlog::info("{}/{}: waiting at offset {} for schema {} from the schema registry", partition.topic,
               partition.partition, partition.offset, schema_id);
  return {};
}

void SchemaWaits::resume_ready(connectors::Consumer& consumer, SchemaCatalog& catalog) {
  if (waits_.empty()) return;
  const auto answered = [&](const Wait& wait) { return catalog.lookup(wait.schema_id).status != SchemaStatus::kPending; };
  const auto ready = std::stable_partition(waits_.begin(), waits_.end(), [&](const Wait& w) { return !answered(w); });
  for (auto it = ready; it != waits_.end(); ++it) {
    // A partition revoked while it waited answers with an error here; its next assignment is not paused.
    if (connectors::KafkaError error = consumer.resume({it->partition}); !error.ok()) {
      spdlog::debug("{}/{}: resume: {}", it->partition.topic, it->partition.partition, error.message());
    } else {
      spdlog::info("{}/{}: schema {} answered, consuming again from offset {}", it->partition.topic,
                   it->partition.partition, it->schema_id, it->partition.offset);
    }
  }
  waits_.erase(ready, waits_.end());
}

}  // namespace bloomgate::app
