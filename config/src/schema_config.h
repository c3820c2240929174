// Internal: the `schema_registry:` and `schemas:` sections, and the check that a pipeline keyed by avro or
// protobuf has one of them.
#pragma once

#include <string>
#include <vector>

#include "bloomgate/config/config.h"
#include "yaml_reader.h"

namespace bloomgate::config::detail {

// `schema_registry: {url, basic_auth: {username, password}, tls: {ca_file, cert_file, key_file},
// cache_size, timeout}`; the defaults (no url) when absent.
SchemaRegistrySettings read_schema_registry(const Context& ctx, MapReader& root);

// `schemas: [{id, type: avro|protobuf|json, file}]`, each file read now; an id given twice is an error.
std::vector<SchemaFile> read_schema_files(const Context& ctx, MapReader& root);

// With neither section: a part of `key` taken from avro or protobuf is an error at its `from`.
void check_schema_sources(const Context& ctx, const YAML::Node& key_node, const std::string& path,
                          const KeySettings& key);

}  // namespace bloomgate::config::detail
