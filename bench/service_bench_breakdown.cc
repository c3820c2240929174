// File: bench/service_bench_breakdown.cc
//
// Where the CPU goes: each part of the service's work alone, in this process, over the same events (key
// extraction, the filter, decide(), a snapshot's filter statistics, the header object, produce, consume).
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "bloomgate/app/key_extractor.h"
#include "bloomgate/app/partition_deduplicator.h"
#include "bloomgate/app/source_header.h"
#include "bloomgate/connectors/handles.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"
#include "bloomgate/filters/time.h"
#include "bench_support.h"
#include "bloomgate/app/schema_catalog.h"
#include "schema_record_writer.h"
#include "service_bench.h"

namespace bloomgate::bench::service_bench {

namespace {

// Median CPU seconds of this thread over `reps` runs of `body`; `prepare` (untimed) runs before each.
// Thread CPU: the in-memory parts run on this thread alone, and the idle librdkafka threads' wake-ups
// are not theirs.
double median_cpu(int reps, const std::function<void()>& prepare, const std::function<void()>& body) {
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    prepare();
    const double start = thread_cpu_seconds();
    body();
    seconds.push_back(thread_cpu_seconds() - start);
  }
  return median(seconds);
}

filters::TimePoint wall_clock_now() {
  return std::chrono::time_point_cast<filters::Duration>(std::chrono::system_clock::now());
}

// (order_id, customer) from the JSON value and the region header: what the configured key's cost is
// compared with.
config::KeySettings three_part_key() {
  config::KeySettings key;
  key.parts = {{config::KeySource::kJson, kKeyPointer, "", false, false},
               {config::KeySource::kJson, "/customer", "", false, false},
               {config::KeySource::kHeader, "", "region", false, false}};
  return key;
}

// Copies of the events ordered by (partition, offset) and allocated in that order, so that each
// partition's events lie one after another in memory, as the records of a fetched batch do. Walking
// Workload::events by partition instead reads each event's three blocks (the Event, its key, its value)
// from far apart: a cache miss each, which would be counted as the parts' own cost.
std::vector<Event> events_in_partition_order(const Workload& w) {
  std::vector<Event> events;
  events.reserve(w.by_partition.size());
  for (const std::size_t i : w.by_partition) events.push_back(w.events[i]);
  return events;
}

// The events with their values as framed records of `type`.
std::vector<Event> as_schema_records(const std::vector<Event>& events, config::SchemaType type) {
  app::SchemaRecordWriter writer(type, bench_schema_text(type), kBenchSchemaId);
  std::vector<Event> out = events;
  for (Event& e : out) e.value = writer.framed(e.value);
  return out;
}

// The configured key's pointer read with `source` (avro or protobuf) from a cached bench schema.
std::vector<app::KeyExtractor> schema_extractors(const config::PipelineSettings& pipeline, config::KeySource source,
                                                 config::SchemaType type, std::size_t partitions) {
  config::Config config;
  config.schemas = {config::SchemaFile{kBenchSchemaId, type, "(bench)", bench_schema_text(type)}};
  const std::shared_ptr<app::SchemaCatalog> catalog = app::make_schema_catalog(config);
  const config::KeySettings key(source, kKeyPointer, "", true);
  std::vector<app::KeyExtractor> extractors;
  for (std::size_t p = 0; p < partitions; ++p) {
    extractors.emplace_back(key, pipeline.max_key_bytes, pipeline.max_value_bytes, catalog);
  }
  return extractors;
}

}  // namespace

Breakdown measure_breakdown(const Setup& setup, const config::PipelineSettings& pipeline, std::vector<bool>& forwarded) {
  const Workload& w = setup.workload;
  const auto n = static_cast<double>(w.events.size());
  const auto partitions = static_cast<std::size_t>(setup.options.partitions);
  const int reps = setup.options.breakdown_reps;
  const std::vector<Event> events = events_in_partition_order(w);
  Breakdown b;
  volatile std::uint64_t sink = 0;

  // (a) key extraction: one extractor per partition, as the service has; the configured key, and a key
  // of three parts over the same events, each given a region header. The two alternate rep by rep, and
  // the ratio is the median of each rep's pair, so a burst of load on the shared machine hits both.
  const auto extraction_pass = [&](std::vector<app::KeyExtractor>& extractors, std::span<const app::EventHeader> headers,
                                   const std::vector<Event>& over = {}) {
    const double start = thread_cpu_seconds();
    std::uint64_t bytes = 0;
    for (const Event& e : over.empty() ? events : over) {
      const app::EventView view{e.key, e.value, headers};
      const app::ExtractionResult result = extractors[static_cast<std::size_t>(e.partition)].extract(view);
      if (!result.has_key()) throw std::runtime_error("key extraction failed: " + result.rejection().message);
      bytes += result.key().bytes().size();
    }
    sink = sink + bytes;
    return (thread_cpu_seconds() - start) * 1e9 / n;
  };
  {
    std::vector<app::KeyExtractor> configured;
    std::vector<app::KeyExtractor> three_parts;
    for (std::size_t p = 0; p < partitions; ++p) {
      configured.emplace_back(pipeline.key, pipeline.max_key_bytes, pipeline.max_value_bytes);
      three_parts.emplace_back(three_part_key(), pipeline.max_key_bytes, pipeline.max_value_bytes);
    }
    const std::vector<app::EventHeader> region_headers{{"trace-id", "t-0001"}, {"region", "eu-west"}};
    std::vector<double> one_pointer;
    std::vector<double> parts;
    std::vector<double> ratios;
    for (int r = 0; r < reps; ++r) {
      one_pointer.push_back(extraction_pass(configured, {}));
      parts.push_back(extraction_pass(three_parts, region_headers));
      ratios.push_back(parts.back() / one_pointer.back());
    }
    b.extract_ns = median(one_pointer);
    b.extract_parts_ns = median(parts);
    b.extract_parts_ratio = median(ratios);
  }
  {  // (a') the same key from Avro and Protobuf records of the same fields, alternated with the JSON pointer
    std::vector<app::KeyExtractor> json;
    for (std::size_t p = 0; p < partitions; ++p) json.emplace_back(pipeline.key, pipeline.max_key_bytes, pipeline.max_value_bytes);
    const std::vector<Event> avro_events = as_schema_records(events, config::SchemaType::kAvro);
    const std::vector<Event> protobuf_events = as_schema_records(events, config::SchemaType::kProtobuf);
    std::vector<app::KeyExtractor> avro =
        schema_extractors(pipeline, config::KeySource::kAvro, config::SchemaType::kAvro, partitions);
    std::vector<app::KeyExtractor> protobuf =
        schema_extractors(pipeline, config::KeySource::kProtobuf, config::SchemaType::kProtobuf, partitions);
    app::ReflectionFieldReader reflection(kBenchProtobufSchema, "order_id");
    app::AvroGenericFieldReader generic(kBenchAvroSchema, "order_id");
    std::vector<double> avro_ns, avro_ratios, protobuf_ns, protobuf_ratios, reflection_ns, generic_ns;
    const auto comparison_pass = [&](const std::vector<Event>& over, const auto& read) {
      const double start = thread_cpu_seconds();
      std::uint64_t bytes = 0;
      for (const Event& e : over) bytes += read(e.value).size();
      sink = sink + bytes;
      return (thread_cpu_seconds() - start) * 1e9 / n;
    };
    for (int r = 0; r < reps; ++r) {
      const double json_ns = extraction_pass(json, {});
      avro_ns.push_back(extraction_pass(avro, {}, avro_events));
      protobuf_ns.push_back(extraction_pass(protobuf, {}, protobuf_events));
      avro_ratios.push_back(avro_ns.back() / json_ns);
      protobuf_ratios.push_back(protobuf_ns.back() / json_ns);
      reflection_ns.push_back(comparison_pass(protobuf_events, [&](const std::string& v) { return reflection.read(v); }));
      generic_ns.push_back(comparison_pass(avro_events, [&](const std::string& v) { return generic.read(v); }));
    }
    b.avro_generic_ns = median(generic_ns);
    b.extract_avro_ns = median(avro_ns);
    b.extract_avro_ratio = median(avro_ratios);
    b.extract_protobuf_ns = median(protobuf_ns);
    b.extract_protobuf_ratio = median(protobuf_ratios);
    b.protobuf_reflection_ns = median(reflection_ns);
  }

  {  // (b) the filter alone: fresh filters per rep, built as the service builds them
    std::vector<std::unique_ptr<filters::Filter>> filter_set;
    const filters::FilterOptions filter_options = app::filter_options_for(pipeline);
    b.filter_ns = median_cpu(reps, [&] {
      filter_set.clear();
      for (std::size_t p = 0; p < partitions; ++p) filter_set.push_back(filters::make_filter(filter_options));
    }, [&] {
      std::uint64_t duplicates = 0;
      for (const Event& e : events) {
        duplicates += filter_set[static_cast<std::size_t>(e.partition)]->test_and_insert(
            std::string_view(e.key), filters::from_epoch_millis(e.timestamp_ms)) ? 1U : 0U;
      }
      sink = sink + duplicates;
    }) * 1e9 / n;
  }

  {  // (c) decide(): what the service does per event without Kafka; also which events it forwards
    std::vector<std::unique_ptr<app::PartitionDeduplicator>> deduplicators;
    std::vector<bool> verdicts(w.events.size(), false);
    b.decide_ns = median_cpu(reps, [&] {
      deduplicators.clear();
      for (std::size_t p = 0; p < partitions; ++p) {
        deduplicators.push_back(std::make_unique<app::PartitionDeduplicator>(pipeline, wall_clock_now));
      }
    }, [&] {
      for (std::size_t k = 0; k < events.size(); ++k) {
        const Event& e = events[k];
        const app::EventView view{e.key, e.value, {}};
        const app::Verdict verdict = deduplicators[static_cast<std::size_t>(e.partition)]->decide(view, e.timestamp_ms);
        if (verdict.outcome == app::Outcome::kDeadLetter) throw std::runtime_error("decide: an event was dead-lettered");
        verdicts[w.by_partition[k]] = verdict.outcome == app::Outcome::kForward;
      }
    }) * 1e9 / n;
    forwarded = verdicts;
    b.forwarded_share = static_cast<double>(std::count(verdicts.begin(), verdicts.end(), true)) / n;

    // (d) one snapshot's filter statistics (publish_snapshot calls stats() on every partition's filter)
    constexpr int kSnapshots = 20;
    const auto now = wall_clock_now();
    const double cpu = median_cpu(reps, [] {}, [&] {
      for (int s = 0; s < kSnapshots; ++s) {
        for (const auto& d : deduplicators) sink = sink + d->filter().stats(d->filter_time(now)).bits;
      }
    });
    b.snapshot_us = cpu * 1e6 / kSnapshots;
    const filters::FilterStats stats = deduplicators.front()->filter().stats(deduplicators.front()->filter_time(now));
    b.filter_slices = stats.slices;
    b.filter_kib = static_cast<double>(stats.memory_bytes) / 1024;  // every byte the filter holds
  }

  {  // (e) the header object Producer::produce builds for a record with the source header
    b.header_objects_ns = median_cpu(reps, [] {}, [&] {
      for (const Event& e : events) {
        const app::SourceText source(kInputTopic, e.partition, e.offset);
        rd_kafka_headers_t* headers = rd_kafka_headers_new(1);
        rd_kafka_header_add(headers, app::headers::kSource, -1, source.view().data(),
                            static_cast<ssize_t>(source.view().size()));
        sink = sink + rd_kafka_header_cnt(headers);
        rd_kafka_headers_destroy(headers);
      }
    }) * 1e9 / n;
  }
  return b;
}

PartFigures measure_produce(const Setup& setup, const std::string& topic, ProduceMode mode,
                            const std::vector<bool>& forwarded) {
  create_topic(setup, topic);
  DeliveryCounter deliveries;
  connectors::ProducerOptions producer_options;
  producer_options.hooks = setup.hooks;
  producer_options.on_delivery = deliveries.function();
  connectors::Producer producer(client_config(setup, false), std::move(producer_options));
  rd_kafka_topic_t* topic_handle = rd_kafka_topic_new(producer.native_handle(), topic.c_str(), nullptr);
  const rd_kafka_metadata_t* metadata = nullptr;
  if (rd_kafka_metadata(producer.native_handle(), 0, topic_handle, &metadata, 10'000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_metadata_destroy(metadata);
  }
  const Workload& w = setup.workload;
  std::vector<connectors::HeaderView> headers;
  std::uint64_t since_poll = 0;
  const double start = process_cpu_seconds();
  const double thread_start = thread_cpu_seconds();
  const auto wall_start = Clock::now();
  for (std::size_t i = 0; i < w.events.size(); ++i) {
    const Event& e = w.events[i];
    if (mode == ProduceMode::kForwardedHeaders && !forwarded[i]) continue;
    std::optional<app::SourceText> source;
    std::array<char, sizeof(std::int32_t) + sizeof(std::int64_t)> binary{};
    if (mode == ProduceMode::kAllWithBinaryHeader) {  // the same facts, without the topic, as raw bytes
      std::memcpy(binary.data(), &e.partition, sizeof e.partition);
      std::memcpy(binary.data() + sizeof e.partition, &e.offset, sizeof e.offset);
      headers.assign({{app::headers::kSource, std::string_view(binary.data(), binary.size())}});
    } else if (mode != ProduceMode::kAllPlain) {  // as OutputHeaders::with_source
      source.emplace(kInputTopic, e.partition, e.offset);
      headers.assign({{app::headers::kSource, source->view()}});
    }
    produce_or_throw(producer, topic, e, headers);
    if (++since_poll >= kProducerPollEvery) {
      since_poll = 0;
      producer.poll(milliseconds(0));
    }
  }
  if (auto error = producer.flush(milliseconds(120'000)); !error.ok()) throw connectors::KafkaException(std::move(error));
  const double cpu = process_cpu_seconds() - start;
  const double thread_cpu = thread_cpu_seconds() - thread_start;
  const double wall = seconds_between(wall_start, Clock::now());
  rd_kafka_topic_destroy(topic_handle);
  deliveries.check("produce alone");
  const auto n = static_cast<double>(w.events.size());
  return {cpu * 1e9 / n, n / wall, thread_cpu * 1e9 / n};
}

PartFigures measure_consume(const Setup& setup, const std::string& group) {
  connectors::ConsumerOptions consumer_options;
  consumer_options.group_id = group;
  consumer_options.hooks = setup.hooks;
  connectors::Consumer consumer(counted_consumer_config(setup), std::move(consumer_options));
  if (auto error = consumer.subscribe({kInputTopic}); !error.ok()) throw connectors::KafkaException(std::move(error));
  std::uint64_t bytes = 0;
  const RoundResult result = consume_loop(
      setup, consumer, nullptr,
      [&](const connectors::ConsumedMessage& message) { bytes += message.value().value_or(std::string_view{}).size(); },
      "consume");
  (void)consumer.close();
  return {result.figures.cpu_ns_per_event, result.figures.events_per_second, result.figures.thread_cpu_ns_per_event};
}

PartFigures measure_consume_calls(const Setup& setup, const std::string& group, std::size_t batch) {
  connectors::ConsumerOptions consumer_options;
  consumer_options.group_id = group;
  consumer_options.hooks = setup.hooks;
  connectors::Consumer consumer(client_config(setup, true), std::move(consumer_options));
  if (auto error = consumer.subscribe({kInputTopic}); !error.ok()) throw connectors::KafkaException(std::move(error));
  const connectors::QueueHandle queue(rd_kafka_queue_get_consumer(consumer.native_handle()));
  std::vector<rd_kafka_message_t*> messages(batch);
  const std::uint64_t total = setup.options.events;
  std::uint64_t consumed = 0;
  double start = 0;
  double thread_start = 0;
  auto wall_start = Clock::now();
  auto last_progress = Clock::now();
  while (consumed < total) {
    std::size_t count = 0;
    if (batch == 1) {
      messages[0] = rd_kafka_consumer_poll(consumer.native_handle(), 100);
      count = messages[0] != nullptr ? 1 : 0;
    } else {
      const ssize_t got = rd_kafka_consume_batch_queue(queue.get(), 100, messages.data(), messages.size());
      count = got > 0 ? static_cast<std::size_t>(got) : 0;
    }
    for (std::size_t i = 0; i < count; ++i) {
      if (messages[i]->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (consumed++ == 0) {  // timed from the first event: the group join before it is not consume work
          start = process_cpu_seconds();
          thread_start = thread_cpu_seconds();
          wall_start = Clock::now();
        }
      }
      rd_kafka_message_destroy(messages[i]);
    }
    if (count > 0) last_progress = Clock::now();
    else if (Clock::now() - last_progress > kStallLimit) throw std::runtime_error("consume alone: no progress for 60 s");
  }
  const double cpu = process_cpu_seconds() - start;
  const double thread_cpu = thread_cpu_seconds() - thread_start;
  const double wall = seconds_between(wall_start, Clock::now());
  (void)consumer.close();
  const auto n = static_cast<double>(total);
  return {cpu * 1e9 / n, n / wall, thread_cpu * 1e9 / n};
}

}  // namespace bloomgate::bench::service_bench
