// File: registry_client.h
//
// The Schema Registry's REST API as bloomgate uses it, over libcurl: GET /schemas/ids/{id} for a schema, and
// GET /subjects/{subject}/versions/{version} for each schema a Protobuf schema references (resolved depth
// first, so a reference comes before what imports it). Blocking: called on the catalog's fetch thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bloomgate/config/config.h"
#include "compiled_schema.h"

namespace bloomgate::app {

struct FetchedSchema {
  enum class Outcome { kFound, kNotFound, kUnreachable } outcome = Outcome::kUnreachable;
  config::SchemaType type = config::SchemaType::kAvro;
  std::string text;
  std::vector<SchemaReference> references;  // in dependency order
  std::string problem;  // kNotFound, kUnreachable: what went wrong, for the log and the dead letter
};

class RegistryClient {
 public:
  explicit RegistryClient(config::SchemaRegistrySettings settings);
  FetchedSchema fetch(std::uint32_t id) const;

 private:
  struct Response {
    long status = 0;  // 0: no answer
    std::string body;
    std::string error;
  };
  Response get(const std::string& path) const;
  // The body of a schema answer into `out`; false (with out.problem) when it is not one.
  bool parse_schema(const std::string& body, FetchedSchema& out) const;
  bool resolve_references(const std::string& body, FetchedSchema& out, int depth) const;

  config::SchemaRegistrySettings settings_;
};

}  // namespace bloomgate::app
