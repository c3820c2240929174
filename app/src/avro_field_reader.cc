#include <avro.h>

#include <cstdlib>
#include <limits>
#include <mutex>

#include "schema_field_readers.h"

namespace bloomgate::app::schema {
namespace {

// avro-c allocates what a datum's lengths and counts claim before it reads their bytes: a record of a few
// bytes claiming a string of a terabyte, or an array of 2^40 nulls (zero bytes each), would make it
// allocate without bound. While a reader decodes, this thread's avro-c allocations may grow by at most
// kAllocationBudgetPerByte times the payload plus kAllocationBudgetBase; past that an allocation fails and
// avro-c reports an error (malformed_avro). Outside a read (schemas being compiled) there is no bound.
constexpr std::size_t kAllocationBudgetPerByte = 64;
constexpr std::size_t kAllocationBudgetBase = 1 << 20;
thread_local std::size_t allocation_budget = std::numeric_limits<std::size_t>::max();

void* bounded_allocator(void*, void* ptr, std::size_t old_size, std::size_t new_size) {
  if (new_size == 0) {
    std::free(ptr);
    return nullptr;
  }
  const std::size_t growth = new_size > old_size ? new_size - old_size : 0;
  if (growth > allocation_budget) return nullptr;
  void* out = std::realloc(ptr, new_size);
  if (out != nullptr && allocation_budget != std::numeric_limits<std::size_t>::max()) allocation_budget -= growth;
  return out;
}

// The budget for one read, restored to none when it ends.
class AllocationBudget {
 public:
  explicit AllocationBudget(std::size_t payload) {
    allocation_budget = kAllocationBudgetBase + kAllocationBudgetPerByte * payload;
  }
  ~AllocationBudget() { allocation_budget = std::numeric_limits<std::size_t>::max(); }
  AllocationBudget(const AllocationBudget&) = delete;
  AllocationBudget& operator=(const AllocationBudget&) = delete;
};

const std::string kWholeValue = "(the whole value)";

Rejection malformed(std::string message) { return Rejection{RejectionReason::kMalformedAvro, std::move(message)}; }

Rejection missing(const std::string& pointer, const std::string& what) {
  return Rejection{RejectionReason::kMissingField, "Avro field " + pointer + " " + what};
}

std::string pointer_of(const std::vector<std::string>& path) {
  std::string out;
  for (const std::string& name : path) out += "/" + name;
  return out;
}

// The scalar `value` as canonical key bytes; not_a_scalar for a record, array or map.
std::optional<Rejection> canonical(avro_value_t& value, const std::string& pointer, std::string& out) {
  out.clear();
  switch (avro_value_get_type(&value)) {
    case AVRO_STRING: {
      const char* text = nullptr;
      size_t size = 0;
      avro_value_get_string(&value, &text, &size);
      out.assign(text, size == 0 ? 0 : size - 1);  // avro-c counts the terminating NUL
      return std::nullopt;
    }
    case AVRO_BYTES: {
      const void* bytes = nullptr;
      size_t size = 0;
      avro_value_get_bytes(&value, &bytes, &size);
      out.assign(static_cast<const char*>(bytes), size);
      return std::nullopt;
    }
    case AVRO_FIXED: {
      const void* bytes = nullptr;
      size_t size = 0;
      avro_value_get_fixed(&value, &bytes, &size);
      out.assign(static_cast<const char*>(bytes), size);
      return std::nullopt;
    }
    case AVRO_INT32: {
      int32_t n = 0;
      avro_value_get_int(&value, &n);
      append_decimal(out, static_cast<std::int64_t>(n));
      return std::nullopt;
    }
    case AVRO_INT64: {
      int64_t n = 0;
      avro_value_get_long(&value, &n);
      append_decimal(out, static_cast<std::int64_t>(n));
      return std::nullopt;
    }
    case AVRO_FLOAT: {
      float f = 0;
      avro_value_get_float(&value, &f);
      append_canonical_double(out, static_cast<double>(f));
      return std::nullopt;
    }
    case AVRO_DOUBLE: {
      double d = 0;
      avro_value_get_double(&value, &d);
      append_canonical_double(out, d);
      return std::nullopt;
    }
    case AVRO_BOOLEAN: {
      int b = 0;
      avro_value_get_boolean(&value, &b);
      out = b != 0 ? "true" : "false";
      return std::nullopt;
    }
    case AVRO_ENUM: {
      int symbol = 0;
      avro_value_get_enum(&value, &symbol);
      const char* name = avro_schema_enum_get(avro_value_get_schema(&value), symbol);
      if (name == nullptr) return malformed("enum index " + std::to_string(symbol) + " has no symbol at " + pointer);
      out = name;
      return std::nullopt;
    }
    case AVRO_NULL: return missing(pointer, "is null");
    default:
      return Rejection{RejectionReason::kNotAScalar,
                       "Avro field " + pointer + " is a record, array or map; a key must be a scalar"};
  }
}

// Through a union to its current branch; the null branch is an absent value.
std::optional<Rejection> through_union(avro_value_t& value, const std::string& pointer) {
  while (avro_value_get_type(&value) == AVRO_UNION) {
    avro_value_t branch;
    if (avro_value_get_current_branch(&value, &branch) != 0) return malformed("a union without a branch at " + pointer);
    value = branch;
  }
  if (avro_value_get_type(&value) == AVRO_NULL) return missing(pointer, "is null");
  return std::nullopt;
}

}  // namespace

struct AvroFieldReader::State {
  std::shared_ptr<const CompiledSchema> schema;
  std::vector<std::string> path;
  std::string pointer;
  std::vector<std::string> prefixes;  // the pointer up to each name, for messages
  avro_value_iface_t* iface = nullptr;
  avro_value_t datum{};
  avro_reader_t reader = nullptr;

  ~State() {
    if (reader != nullptr) avro_reader_free(reader);
    if (datum.self != nullptr) avro_value_decref(&datum);
    if (iface != nullptr) avro_value_iface_decref(iface);
  }
};

AvroFieldReader::AvroFieldReader(std::shared_ptr<const CompiledSchema> schema, const std::vector<std::string>& path)
    : state_(std::make_unique<State>()) {
  static std::once_flag allocator_set;
  std::call_once(allocator_set, [] { avro_set_allocator(bounded_allocator, nullptr); });
  state_->schema = std::move(schema);
  state_->path = path;
  state_->pointer = pointer_of(path);
  for (std::size_t i = 1; i <= path.size(); ++i) {
    state_->prefixes.push_back(pointer_of(std::vector<std::string>(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(i))));
  }
  state_->iface = avro_generic_class_from_schema(state_->schema->avro());
  if (state_->iface == nullptr || avro_generic_value_new(state_->iface, &state_->datum) != 0) {
    throw SchemaError(std::string("avro-c cannot make a value of the schema: ") + avro_strerror());
  }
  state_->reader = avro_reader_memory(nullptr, 0);
}

AvroFieldReader::~AvroFieldReader() = default;

std::optional<Rejection> AvroFieldReader::read(std::string_view payload, std::string& out) {
  State& s = *state_;
  avro_reader_memory_set_source(s.reader, payload.data(), static_cast<int64_t>(payload.size()));
  avro_value_reset(&s.datum);
  {
    const AllocationBudget budget(payload.size());
    if (avro_value_read(s.reader, &s.datum) != 0) {
      return malformed(std::string("the value does not decode: ") + avro_strerror());
    }
  }
  char extra = 0;  // avro_reader_is_eof() answers for file readers only: a byte left to read is one too many
  if (avro_read(s.reader, &extra, 1) == 0) return malformed("bytes remain after the Avro datum");
  avro_value_t at = s.datum;
  for (std::size_t i = 0; i < s.path.size(); ++i) {
    const std::string& name = s.path[i];
    const std::string& walked = s.prefixes[i];
    if (std::optional<Rejection> absent = through_union(at, i == 0 ? kWholeValue : s.prefixes[i - 1])) return absent;
    if (avro_value_get_type(&at) != AVRO_RECORD) return missing(walked, "does not exist: its parent is not a record");
    avro_value_t child;
    if (avro_value_get_by_name(&at, name.c_str(), &child, nullptr) != 0) return missing(walked, "is not in the schema");
    at = child;
  }
  if (std::optional<Rejection> absent = through_union(at, s.pointer)) return absent;
  return canonical(at, s.pointer, out);
}

}  // namespace bloomgate::app::schema
