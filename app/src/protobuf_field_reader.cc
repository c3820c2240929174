#include <google/protobuf/descriptor.h>

#include <bit>
#include <cstring>

#include "schema_field_readers.h"

namespace bloomgate::app::schema {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

enum WireType : unsigned { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

Rejection malformed(std::string message) { return Rejection{RejectionReason::kMalformedProtobuf, std::move(message)}; }

unsigned wire_type_of(const FieldDescriptor& field) {
  switch (field.type()) {
    case FieldDescriptor::TYPE_DOUBLE:
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED64: return kFixed64;
    case FieldDescriptor::TYPE_FLOAT:
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_SFIXED32: return kFixed32;
    case FieldDescriptor::TYPE_STRING:
    case FieldDescriptor::TYPE_BYTES:
    case FieldDescriptor::TYPE_MESSAGE: return kLengthDelimited;
    case FieldDescriptor::TYPE_GROUP: return kStartGroup;
    default: return kVarint;
  }
}

// A field's value on the wire: a varint or fixed number, or a length-delimited range.
struct WireValue {
  std::uint64_t number = 0;
  std::string_view bytes;
};

// Past one field's value of `wire_type` at `at`; its value into `value`. False when the bytes end early.
bool read_value(std::string_view message, std::size_t& at, unsigned wire_type, WireValue& value) {
  switch (wire_type) {
    case kVarint: return read_varint(message, at, value.number);
    case kFixed64:
    case kFixed32: {
      const std::size_t size = wire_type == kFixed64 ? 8 : 4;
      if (message.size() - at < size) return false;
      value.number = 0;
      std::memcpy(&value.number, message.data() + at, size);  // little-endian on the wire and on x86-64
      at += size;
      return true;
    }
    case kLengthDelimited: {
      std::uint64_t length = 0;
      if (!read_varint(message, at, length) || length > message.size() - at) return false;
      value.bytes = message.substr(at, length);
      at += length;
      return true;
    }
    default: return false;
  }
}

// Past a group's fields up to its end-group tag.
bool skip_group(std::string_view message, std::size_t& at, int depth) {
  if (depth > 64) return false;
  while (at < message.size()) {
    std::uint64_t tag = 0;
    if (!read_varint(message, at, tag)) return false;
    const unsigned wire_type = tag & 7U;
    if (wire_type == kEndGroup) return true;
    WireValue ignored;
    if (wire_type == kStartGroup ? !skip_group(message, at, depth + 1) : !read_value(message, at, wire_type, ignored)) {
      return false;
    }
  }
  return false;
}

}  // namespace

// The pointer resolved in one message of the schema: the fields on the way, or why it cannot be a key.
struct ProtobufFieldReader::Path {
  std::array<std::int32_t, kMaxMessageIndexes> indexes{};
  std::size_t index_count = 0;
  std::vector<const FieldDescriptor*> fields;
  std::optional<Rejection> problem;
};

ProtobufFieldReader::ProtobufFieldReader(std::shared_ptr<const CompiledSchema> schema, const std::vector<std::string>& path)
    : schema_(std::move(schema)), names_(path) {}

ProtobufFieldReader::~ProtobufFieldReader() = default;

namespace {

const Descriptor* message_at(const google::protobuf::FileDescriptor& file, const Frame& frame) {
  const Descriptor* message = nullptr;
  for (std::size_t i = 0; i < frame.index_count; ++i) {
    const int index = frame.indexes[i];
    const int count = message == nullptr ? file.message_type_count() : message->nested_type_count();
    if (index >= count) return nullptr;
    message = message == nullptr ? file.message_type(index) : message->nested_type(index);
  }
  return message;
}

std::optional<Rejection> resolve(const Descriptor* message, const std::vector<std::string>& names,
                                 std::vector<const FieldDescriptor*>& fields) {
  std::string walked;
  for (std::size_t i = 0; i < names.size(); ++i) {
    walked += "/" + names[i];
    const FieldDescriptor* field = message == nullptr ? nullptr : message->FindFieldByName(names[i]);
    if (field == nullptr) {
      return Rejection{RejectionReason::kMissingField, "Protobuf field " + walked + " is not in the schema's message"};
    }
    const bool last = i + 1 == names.size();
    if (field->is_repeated() || (last && field->type() == FieldDescriptor::TYPE_MESSAGE) ||
        field->type() == FieldDescriptor::TYPE_GROUP) {
      return Rejection{RejectionReason::kNotAScalar,
                       "Protobuf field " + walked + " is repeated, a map or a message; a key must be a scalar"};
    }
    if (!last && field->type() != FieldDescriptor::TYPE_MESSAGE) {
      return Rejection{RejectionReason::kMissingField, "Protobuf field " + walked + " is a scalar, not a message"};
    }
    fields.push_back(field);
    message = field->message_type();
  }
  return std::nullopt;
}

// The last occurrence of fields[step...] under `message` into `found`; merged messages are searched in order,
// so a later occurrence wins as libprotobuf's merge does.
// `found` is what was found, `present` whether anything was, and `reached` whether the message holding the
// last field was (an absent proto3 scalar in a present message reads as its default).
struct Search {
  bool present = false;
  bool reached = false;
  WireValue found;
};

std::optional<Rejection> find(std::string_view message, const std::vector<const FieldDescriptor*>& fields,
                              std::size_t step, Search& search) {
  const FieldDescriptor& field = *fields[step];
  if (step + 1 == fields.size()) search.reached = true;
  const unsigned want = wire_type_of(field);
  std::size_t at = 0;
  while (at < message.size()) {
    std::uint64_t tag = 0;
    if (!read_varint(message, at, tag)) return malformed("a field tag runs past the end of the message");
    const unsigned wire_type = tag & 7U;
    const std::uint64_t number = tag >> 3U;
    if (number == 0) return malformed("a field has number 0");
    WireValue value;
    if (wire_type == kStartGroup) {
      if (!skip_group(message, at, 0)) return malformed("a group does not end");
      continue;
    }
    if (!read_value(message, at, wire_type, value)) return malformed("a field's value runs past the end of the message");
    if (number != static_cast<std::uint64_t>(field.number())) continue;
    if (wire_type != want) {
      return malformed("field " + std::string(field.name()) + " (number " + std::to_string(number) + ") has wire type " +
                       std::to_string(wire_type) + " where its schema type needs " + std::to_string(want));
    }
    if (step + 1 == fields.size()) {
      search.present = true;
      search.found = value;
    } else if (std::optional<Rejection> inner = find(value.bytes, fields, step + 1, search)) {
      return inner;
    }
  }
  return std::nullopt;
}

void canonical(const FieldDescriptor& field, const WireValue& value, std::string& out) {
  out.clear();
  const std::uint64_t n = value.number;
  switch (field.type()) {
    case FieldDescriptor::TYPE_STRING:
    case FieldDescriptor::TYPE_BYTES: out.assign(value.bytes); return;
    case FieldDescriptor::TYPE_INT64:
    case FieldDescriptor::TYPE_SFIXED64: append_decimal(out, static_cast<std::int64_t>(n)); return;
    case FieldDescriptor::TYPE_INT32:
    case FieldDescriptor::TYPE_SFIXED32:
      append_decimal(out, static_cast<std::int64_t>(static_cast<std::int32_t>(static_cast<std::uint32_t>(n))));
      return;
    case FieldDescriptor::TYPE_UINT64:
    case FieldDescriptor::TYPE_FIXED64: append_decimal(out, n); return;
    case FieldDescriptor::TYPE_UINT32:
    case FieldDescriptor::TYPE_FIXED32: append_decimal(out, static_cast<std::uint64_t>(static_cast<std::uint32_t>(n))); return;
    case FieldDescriptor::TYPE_SINT32:
    case FieldDescriptor::TYPE_SINT64: {
      const std::uint64_t decoded = (n >> 1U) ^ (~(n & 1U) + 1U);
      const auto wide = static_cast<std::int64_t>(decoded);
      append_decimal(out, field.type() == FieldDescriptor::TYPE_SINT32 ? static_cast<std::int32_t>(wide) : wide);
      return;
    }
    case FieldDescriptor::TYPE_BOOL: out = n != 0 ? "true" : "false"; return;
    case FieldDescriptor::TYPE_DOUBLE: append_canonical_double(out, std::bit_cast<double>(n)); return;
    case FieldDescriptor::TYPE_FLOAT:
      append_canonical_double(out, static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(n))));
      return;
    case FieldDescriptor::TYPE_ENUM: {
      const auto* symbol = field.enum_type()->FindValueByNumber(static_cast<std::int32_t>(static_cast<std::uint32_t>(n)));
      if (symbol != nullptr) out = symbol->name();
      else append_decimal(out, static_cast<std::int64_t>(static_cast<std::int32_t>(static_cast<std::uint32_t>(n))));
      return;
    }
    default: return;  // messages and groups are refused when the path is resolved
  }
}

// What an absent proto3 scalar without presence reads as: its default, on the wire's terms.
WireValue default_of(const FieldDescriptor& field) {
  WireValue value;
  if (field.type() == FieldDescriptor::TYPE_ENUM) value.number = static_cast<std::uint32_t>(field.default_value_enum()->number());
  return value;
}

}  // namespace

const ProtobufFieldReader::Path& ProtobufFieldReader::path_for(const Frame& frame) {
  if (last_ && last_->index_count == frame.index_count &&
      std::equal(frame.indexes.begin(), frame.indexes.begin() + static_cast<std::ptrdiff_t>(frame.index_count),
                 last_->indexes.begin())) {
    return *last_;
  }
  auto path = std::make_unique<Path>();
  path->indexes = frame.indexes;
  path->index_count = frame.index_count;
  const Descriptor* message = message_at(*schema_->protobuf(), frame);
  if (message == nullptr) {
    path->problem = malformed("the message indexes name no message of schema " + std::to_string(frame.id));
  } else {
    path->problem = resolve(message, names_, path->fields);
  }
  last_ = std::move(path);
  return *last_;
}

std::optional<Rejection> ProtobufFieldReader::read(const Frame& frame, std::string& out) {
  const Path& path = path_for(frame);
  if (path.problem) return path.problem;
  Search search;
  if (std::optional<Rejection> bad = find(frame.payload, path.fields, 0, search)) return bad;
  const FieldDescriptor& field = *path.fields.back();
  if (!search.present) {
    if (field.has_presence() || !search.reached) {
      return Rejection{RejectionReason::kMissingField, "Protobuf field " + std::string(field.full_name()) + " is absent"};
    }
    search.found = default_of(field);
  }
  canonical(field, search.found, out);
  return std::nullopt;
}

}  // namespace bloomgate::app::schema
