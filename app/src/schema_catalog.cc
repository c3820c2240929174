#include "bloomgate/app/schema_catalog.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "compiled_schema.h"
#include "registry_client.h"

namespace bloomgate::app {
namespace {

constexpr std::chrono::milliseconds kFirstBackoff{100};
constexpr std::chrono::milliseconds kLongestBackoff{5000};

SchemaLookup compiled_or_unknown(config::SchemaType type, const std::string& text,
                                 const std::vector<SchemaReference>& references, std::uint32_t id) {
  try {
    return {SchemaStatus::kReady, CompiledSchema::compile(type, text, references), {}};
  } catch (const SchemaError& e) {
    return {SchemaStatus::kUnknown, nullptr, "schema " + std::to_string(id) + ": " + e.what()};
  }
}

// Schemas by id, least recently used first out once over `capacity`.
class SchemaCache {
 public:
  explicit SchemaCache(std::size_t capacity) : capacity_(capacity) {}

  const SchemaLookup* find(std::uint32_t id) {
    const auto it = entries_.find(id);
    if (it == entries_.end()) return nullptr;
    recency_.splice(recency_.begin(), recency_, it->second.place);
    return &it->second.lookup;
  }

  void put(std::uint32_t id, SchemaLookup lookup) {
    if (const auto it = entries_.find(id); it != entries_.end()) recency_.erase(it->second.place);
    recency_.push_front(id);
    entries_[id] = Entry{std::move(lookup), recency_.begin()};
    while (entries_.size() > capacity_) {
      entries_.erase(recency_.back());
      recency_.pop_back();
    }
  }

 private:
  struct Entry {
    SchemaLookup lookup;
    std::list<std::uint32_t>::iterator place;
  };
  std::size_t capacity_;
  std::map<std::uint32_t, Entry> entries_;
  std::list<std::uint32_t> recency_;  // most recent first
};

class Catalog final : public SchemaCatalog {
 public:
  Catalog(const config::Config& config) : cache_(config.schema_registry.cache_size) {
    for (const config::SchemaFile& file : config.schemas) {
      SchemaLookup compiled = compiled_or_unknown(file.type, file.text, {}, file.id);
      if (compiled.status != SchemaStatus::kReady) throw std::runtime_error("schemas: " + file.file + ": " + compiled.problem);
      files_[file.id] = std::move(compiled);
    }
    if (!config.schema_registry.url.empty()) {
      client_ = std::make_unique<RegistryClient>(config.schema_registry);
      fetcher_ = std::thread([this] { fetch_loop(); });
    }
  }

  ~Catalog() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (fetcher_.joinable()) fetcher_.join();
  }

  SchemaLookup lookup(std::uint32_t id) override {
    if (const auto file = files_.find(id); file != files_.end()) return file->second;
    if (!client_) return {SchemaStatus::kUnknown, nullptr, "schema id " + std::to_string(id) + " is not in schemas"};
    std::lock_guard lock(mutex_);
    if (const SchemaLookup* cached = cache_.find(id)) return *cached;
    if (std::find(queue_.begin(), queue_.end(), id) == queue_.end()) {
      queue_.push_back(id);
      wake_.notify_all();
    }
    return {};
  }

  bool registry_reachable() const override { return reachable_.load(std::memory_order_relaxed); }
  std::uint64_t failed_requests() const override { return failed_requests_.load(std::memory_order_relaxed); }

 private:
  void fetch_loop() {
    std::chrono::milliseconds backoff = kFirstBackoff;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (queue_.empty()) {
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        continue;
      }
      const std::uint32_t id = queue_.front();
      lock.unlock();
      const FetchedSchema fetched = client_->fetch(id);
      lock.lock();
      if (fetched.outcome == FetchedSchema::Outcome::kUnreachable) {
        note_unreachable(id, fetched.problem, backoff);
        wake_.wait_for(lock, backoff, [&] { return stopping_; });
        backoff = std::min(backoff * 2, kLongestBackoff);
        continue;
      }
      if (!reachable_.exchange(true)) spdlog::info("schema registry: answering again");
      backoff = kFirstBackoff;
      queue_.pop_front();
      if (fetched.outcome == FetchedSchema::Outcome::kNotFound) {
        spdlog::warn("schema registry: {}", fetched.problem);
        cache_.put(id, {SchemaStatus::kUnknown, nullptr, fetched.problem});
      } else {
        lock.unlock();  // compiling may take a while; lookups go on meanwhile
        SchemaLookup compiled = compiled_or_unknown(fetched.type, fetched.text, fetched.references, id);
        lock.lock();
        if (compiled.status != SchemaStatus::kReady) spdlog::warn("schema registry: {}", compiled.problem);
        cache_.put(id, std::move(compiled));
      }
    }
  }

  void note_unreachable(std::uint32_t id, const std::string& problem, std::chrono::milliseconds backoff) {
    failed_requests_.fetch_add(1, std::memory_order_relaxed);
    if (reachable_.exchange(false)) {
      spdlog::warn("schema registry: schema {} cannot be fetched ({}); its partitions wait, asking again in {} ms, "
                   "backing off to {} ms",
                   id, problem, backoff.count(), kLongestBackoff.count());
    }
  }

  std::map<std::uint32_t, SchemaLookup> files_;  // read-only after construction
  std::unique_ptr<RegistryClient> client_;
  std::mutex mutex_;
  std::condition_variable wake_;
  SchemaCache cache_;
  std::deque<std::uint32_t> queue_;
  bool stopping_ = false;
  std::atomic<bool> reachable_{true};
  std::atomic<std::uint64_t> failed_requests_{0};
  std::thread fetcher_;  // last: started once everything it uses exists
};

}  // namespace

std::shared_ptr<SchemaCatalog> make_schema_catalog(const config::Config& config) {
  if (config.schema_registry.url.empty() && config.schemas.empty()) return nullptr;
  return std::make_shared<Catalog>(config);
}

}  // namespace bloomgate::app
