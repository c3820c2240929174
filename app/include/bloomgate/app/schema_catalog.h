// File: schema_catalog.h
//
// Where key extraction finds a schema by id: the `schemas:` files, the Schema Registry, or both (a file's
// id is never asked of the registry). lookup() never blocks and never makes a request on the calling
// thread: an id not seen before is queued for one fetch on the catalog's own thread and is kPending until
// the answer; the records that need it wait (KeyExtractor says kPending, the service pauses the partition).
// While the registry cannot be reached the fetch is retried with backoff (100 ms doubling to 5 s); an id the
// registry answers 404 for is kUnknown (the records are dead letters, unknown_schema), and so is a schema
// that does not compile. Compiled schemas are kept up to `schema_registry.cache_size`, least recently used
// dropped first (fetched again when needed). Thread-safe: every partition worker of the process shares one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bloomgate/config/config.h"

namespace bloomgate::app {

class CompiledSchema;

enum class SchemaStatus { kReady, kPending, kUnknown };

struct SchemaLookup {
  SchemaStatus status = SchemaStatus::kPending;
  std::shared_ptr<const CompiledSchema> schema;  // kReady
  std::string problem;                           // kUnknown: what the registry or the compiler said
};

class SchemaCatalog {
 public:
  virtual ~SchemaCatalog() = default;
  virtual SchemaLookup lookup(std::uint32_t id) = 0;
  // False from a failed request to the registry until one succeeds (always true without a registry).
  virtual bool registry_reachable() const = 0;
  // Requests that did not reach the registry (connection refused, timeouts, 5xx), for the metric.
  virtual std::uint64_t failed_requests() const = 0;
};

// The catalog `config` describes (schema files first, then the registry), or null when it has neither.
// Throws std::runtime_error naming the id when a schema file does not compile.
std::shared_ptr<SchemaCatalog> make_schema_catalog(const config::Config& config);

}  // namespace bloomgate::app
