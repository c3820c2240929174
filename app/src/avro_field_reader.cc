// The Avro key reader: the writer's schema as avro-c parsed it, walked over the datum's bytes. Every field is
// read or skipped by its schema type (so the whole datum is checked, as a decoder would), and the key's field
// is rendered where the walk meets it; nothing is allocated per record. Why not avro-c's generic value
// decoder: docs/decisions/avro-field-reader.md.
#include <avro.h>

#include <cstring>

#include "schema_field_readers.h"

namespace bloomgate::app::schema {
namespace {

constexpr int kMaxDepth = 64;
// Array and map items a datum may hold per byte of payload (plus a base): items of zero bytes (nulls)
// could otherwise make a few bytes claim 2^62 of them.
constexpr std::uint64_t kItemsPerByte = 8;
constexpr std::uint64_t kItemsBase = 1024;

struct Cursor {
  std::string_view bytes;
  std::size_t at = 0;
  std::uint64_t items_left = 0;

  std::size_t left() const { return bytes.size() - at; }
};

bool read_long(Cursor& c, std::int64_t& out) {
  std::uint64_t raw = 0;
  if (!read_varint(c.bytes, c.at, raw)) return false;
  out = static_cast<std::int64_t>((raw >> 1U) ^ (~(raw & 1U) + 1U));
  return true;
}

avro_schema_t resolved(avro_schema_t schema) {
  return avro_typeof(schema) == AVRO_LINK ? avro_schema_link_target(schema) : schema;
}

// A length-prefixed string or bytes value.
bool read_bytes(Cursor& c, std::string_view& out) {
  std::int64_t length = 0;
  if (!read_long(c, length) || length < 0 || static_cast<std::uint64_t>(length) > c.left()) return false;
  out = c.bytes.substr(c.at, static_cast<std::size_t>(length));
  c.at += static_cast<std::size_t>(length);
  return true;
}

bool skip(avro_schema_t schema, Cursor& c, int depth);

// Blocks of items (a map's each with a string key): a count, negative when a byte size follows, until 0.
bool skip_blocks(avro_schema_t items, bool map, Cursor& c, int depth) {
  while (true) {
    std::int64_t count = 0;
    if (!read_long(c, count)) return false;
    if (count == 0) return true;
    if (count < 0) {
      std::int64_t size = 0;
      if (!read_long(c, size) || count == INT64_MIN) return false;
      count = -count;
    }
    if (static_cast<std::uint64_t>(count) > c.items_left) return false;
    c.items_left -= static_cast<std::uint64_t>(count);
    for (std::int64_t i = 0; i < count; ++i) {
      std::string_view key;
      if ((map && !read_bytes(c, key)) || !skip(items, c, depth + 1)) return false;
    }
  }
}

bool skip_fixed(Cursor& c, std::size_t size) {
  if (size > c.left()) return false;
  c.at += size;
  return true;
}

bool skip(avro_schema_t schema, Cursor& c, int depth) {
  if (depth > kMaxDepth) return false;
  schema = resolved(schema);
  std::int64_t n = 0;
  std::string_view bytes;
  switch (avro_typeof(schema)) {
    case AVRO_NULL: return true;
    case AVRO_BOOLEAN: return c.left() >= 1 && static_cast<unsigned char>(c.bytes[c.at++]) <= 1;
    case AVRO_INT32:
    case AVRO_INT64: return read_long(c, n);
    case AVRO_FLOAT: return skip_fixed(c, 4);
    case AVRO_DOUBLE: return skip_fixed(c, 8);
    case AVRO_STRING:
    case AVRO_BYTES: return read_bytes(c, bytes);
    case AVRO_FIXED: return skip_fixed(c, static_cast<std::size_t>(avro_schema_fixed_size(schema)));
    case AVRO_ENUM: return read_long(c, n) && n >= 0 && n < avro_schema_enum_number_of_symbols(schema);
    case AVRO_UNION:
      return read_long(c, n) && n >= 0 && static_cast<std::size_t>(n) < avro_schema_union_size(schema) &&
             skip(avro_schema_union_branch(schema, static_cast<int>(n)), c, depth + 1);
    case AVRO_ARRAY: return skip_blocks(avro_schema_array_items(schema), false, c, depth);
    case AVRO_MAP: return skip_blocks(avro_schema_map_values(schema), true, c, depth);
    case AVRO_RECORD:
      for (std::size_t i = 0; i < avro_schema_record_size(schema); ++i) {
        if (!skip(avro_schema_record_field_get_by_index(schema, static_cast<int>(i)), c, depth + 1)) return false;
      }
      return true;
    default: return false;
  }
}

// What the walk found at the key's path.
struct Found {
  enum class What { kNothing, kValue, kNull, kNotAScalar, kNotARecord, kNoSuchField } what = What::kNothing;
  std::size_t step = 0;  // the path step it is about
};

// The scalar of `schema` at the cursor as canonical bytes; the cursor moves past it. False: malformed.
bool render(avro_schema_t schema, Cursor& c, std::string& out, Found& found, int depth) {
  const std::size_t start = c.at;
  if (!skip(schema, c, depth)) return false;
  const std::string_view datum = c.bytes.substr(start, c.at - start);
  Cursor value{datum, 0, 0};
  out.clear();
  found.what = Found::What::kValue;
  std::int64_t n = 0;
  switch (avro_typeof(schema)) {
    case AVRO_STRING:
    case AVRO_BYTES: {
      std::string_view bytes;
      read_bytes(value, bytes);
      out.assign(bytes);
      return true;
    }
    case AVRO_FIXED: out.assign(datum); return true;
    case AVRO_INT32:
    case AVRO_INT64: read_long(value, n); append_decimal(out, n); return true;
    case AVRO_FLOAT: {
      float f = 0;
      std::memcpy(&f, datum.data(), sizeof f);
      append_canonical_double(out, static_cast<double>(f));
      return true;
    }
    case AVRO_DOUBLE: {
      double d = 0;
      std::memcpy(&d, datum.data(), sizeof d);
      append_canonical_double(out, d);
      return true;
    }
    case AVRO_BOOLEAN: out = datum[0] != 0 ? "true" : "false"; return true;
    case AVRO_ENUM: read_long(value, n); out = avro_schema_enum_get(schema, static_cast<int>(n)); return true;
    case AVRO_NULL: found.what = Found::What::kNull; return true;
    default: found.what = Found::What::kNotAScalar; return true;
  }
}

// Walks a datum of `schema` along path[step...]: the field on the path is followed (through unions, whose
// null branch is an absent value) and the last one rendered; every other field is skipped. False: malformed.
bool walk(avro_schema_t schema, const std::vector<std::string>& path, std::size_t step, Cursor& c, std::string& out,
          Found& found, int depth) {
  if (depth > kMaxDepth) return false;
  schema = resolved(schema);
  while (avro_typeof(schema) == AVRO_UNION) {
    std::int64_t branch = 0;
    if (!read_long(c, branch) || branch < 0 || static_cast<std::size_t>(branch) >= avro_schema_union_size(schema)) {
      return false;
    }
    schema = resolved(avro_schema_union_branch(schema, static_cast<int>(branch)));
  }
  found.step = step;
  if (step == path.size()) return render(schema, c, out, found, depth);
  if (avro_typeof(schema) == AVRO_NULL) {
    found.what = Found::What::kNull;
    return true;
  }
  if (avro_typeof(schema) != AVRO_RECORD) {
    found.what = Found::What::kNotARecord;
    return skip(schema, c, depth);
  }
  const int target = avro_schema_record_field_get_index(schema, path[step].c_str());
  if (target < 0) found.what = Found::What::kNoSuchField;
  for (std::size_t i = 0; i < avro_schema_record_size(schema); ++i) {
    avro_schema_t field = avro_schema_record_field_get_by_index(schema, static_cast<int>(i));
    const bool on_path = static_cast<int>(i) == target;
    if (on_path ? !walk(field, path, step + 1, c, out, found, depth + 1) : !skip(field, c, depth + 1)) return false;
  }
  return true;
}

std::string pointer_to(const std::vector<std::string>& path, std::size_t steps) {
  std::string out;
  for (std::size_t i = 0; i < steps && i < path.size(); ++i) out += "/" + path[i];
  return out.empty() ? "(the whole value)" : out;
}

}  // namespace

struct AvroFieldReader::State {
  std::shared_ptr<const CompiledSchema> schema;
  std::vector<std::string> path;
};

AvroFieldReader::AvroFieldReader(std::shared_ptr<const CompiledSchema> schema, const std::vector<std::string>& path)
    : state_(std::make_unique<State>()) {
  state_->schema = std::move(schema);
  state_->path = path;
}

AvroFieldReader::~AvroFieldReader() = default;

std::optional<Rejection> AvroFieldReader::read(std::string_view payload, std::string& out) {
  const State& s = *state_;
  Cursor cursor{payload, 0, kItemsBase + kItemsPerByte * payload.size()};
  Found found;
  if (!walk(s.schema->avro(), s.path, 0, cursor, out, found, 0)) {
    return Rejection{RejectionReason::kMalformedAvro, "the value does not decode with schema's Avro types"};
  }
  if (cursor.at != payload.size()) return Rejection{RejectionReason::kMalformedAvro, "bytes remain after the Avro datum"};
  const std::string where = pointer_to(s.path, found.step);
  switch (found.what) {
    case Found::What::kValue: return std::nullopt;
    case Found::What::kNull: return Rejection{RejectionReason::kMissingField, "Avro field " + where + " is null"};
    case Found::What::kNotAScalar:
      return Rejection{RejectionReason::kNotAScalar, "Avro field " + where + " is a record, array or map; a key must be a scalar"};
    case Found::What::kNotARecord:
      return Rejection{RejectionReason::kMissingField, "Avro field " + where + " is not a record: " +
                                                           pointer_to(s.path, s.path.size()) + " does not exist"};
    case Found::What::kNoSuchField:
    case Found::What::kNothing: break;
  }
  return Rejection{RejectionReason::kMissingField,
                   "Avro field " + pointer_to(s.path, found.step + 1) + " is not in the schema"};
}

}  // namespace bloomgate::app::schema
