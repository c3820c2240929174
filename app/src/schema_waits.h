// File: schema_waits.h
//
// The partitions of one loop held back for a schema that the catalog is still fetching. A record whose key
// needs such a schema is not decided: its partition is paused and sought back to it, so that record and
// the ones after it are fetched again once the partition resumes, which it does as soon as the catalog
// has an answer for the id (the schema, or unknown_schema). Nothing is dead-lettered while the registry is
// merely slow or down, and nothing is decided twice: the records after the held one in the batch in hand
// are stale after the seek (Consumer::moved_since_batch) and skipped.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "bloomgate/app/schema_catalog.h"
#include "bloomgate/connectors/consumer.h"

namespace bloomgate::app {

class SchemaWaits {
 public:
  // Pauses `message`'s partition at `message` until schema `schema_id` is no longer pending.
  connectors::KafkaError hold(connectors::Consumer& consumer, const connectors::ConsumedMessage& message,
                              std::uint32_t schema_id);
  // Resumes every held partition whose schema the catalog now answers for. A partition revoked meanwhile
  // is dropped: its next owner starts it afresh.
  void resume_ready(connectors::Consumer& consumer, SchemaCatalog& catalog);
  // Partitions held now, for the snapshot.
  std::size_t held() const noexcept { return waits_.size(); }

 private:
  struct Wait {
    connectors::TopicPartition partition;
    std::uint32_t schema_id;
  };
  std::vector<Wait> waits_;
};

}  // namespace bloomgate::app
