// File: checkpoint_filter.cc
#include "bloomgate/connectors/checkpoint_filter.h"

#include <string>

#include "bloomgate/filters/format.h"

namespace bloomgate::connectors {

std::unique_ptr<filters::Filter> restore_checkpoint_filter(std::string_view meta,
                                                           const std::optional<std::string_view>& snapshot_header,
                                                           const WithRecordViews& with_bands,
                                                           const WithRecordViews& with_slices, RestoreReport& report) {
  report = {};
  std::unique_ptr<filters::Filter> filter;
  if (snapshot_header) {
    try {
      with_bands([&](const filters::SliceViews& bands) { filter = filters::restore_snapshot(meta, *snapshot_header, bands); });
      if (filter) {
        report.from_snapshot = true;
        return filter;
      }
      report.snapshot_ignored = "it was taken at another checkpoint";
    } catch (const filters::FormatError& e) {
      report.snapshot_ignored = e.what();  // the slices are the checkpoint; the snapshot was only a copy
    }
  }
  with_slices([&](const filters::SliceViews& slices) { filter = filters::restore(meta, slices); });
  return filter;
}

namespace {

// Views of records held in memory, by id: the slices of a state-topic checkpoint (a map) or its bands (a vector).
filters::SliceViews views_of(const std::map<std::uint64_t, std::string>& records) {
  return filters::SliceViews([&records](std::uint64_t id) -> std::optional<std::string_view> {
    const auto it = records.find(id);
    if (it == records.end()) return std::nullopt;
    return std::string_view(it->second);
  });
}

filters::SliceViews views_of(const std::vector<std::string>& records) {
  return filters::SliceViews([&records](std::uint64_t id) -> std::optional<std::string_view> {
    if (id >= records.size()) return std::nullopt;
    return std::string_view(records[id]);
  });
}

}  // namespace

std::unique_ptr<filters::Filter> restore_checkpoint_filter(const StateTopicCheckpoint& checkpoint,
                                                           RestoreReport& report) {
  std::optional<std::string_view> header;
  if (checkpoint.snapshot && !checkpoint.snapshot->header.empty()) header = checkpoint.snapshot->header;
  const auto with_bands = [&checkpoint](const std::function<void(const filters::SliceViews&)>& use) {
    use(views_of(checkpoint.snapshot->bands));
  };
  const auto with_slices = [&checkpoint](const std::function<void(const filters::SliceViews&)>& use) {
    use(views_of(checkpoint.slices));
  };
  return restore_checkpoint_filter(checkpoint.meta, header, with_bands, with_slices, report);
}

}  // namespace bloomgate::connectors
