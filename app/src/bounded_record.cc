// File: bounded_record.cc
#include "bounded_record.h"

#include <algorithm>

#include "bloomgate/app/service.h"
#include "bloomgate/connectors/record_size.h"

namespace bloomgate::app {
namespace {

using connectors::header_wire_size;
using connectors::HeaderView;

constexpr std::size_t kCountDigits = 20;  // the most a size_t in decimal needs

// Room for the three markers, whatever their counts.
std::size_t marker_room() {
  const std::string widest(kCountDigits, '9');
  return header_wire_size(headers::kKeyDropped, widest) + header_wire_size(headers::kHeadersDropped, widest) +
         header_wire_size(headers::kValueTruncated, widest);
}

}  // namespace

std::size_t BoundedRecord::least_size(std::span<const HeaderView> own) {
  return connectors::kRecordFramingBytes + connectors::headers_wire_size(own) + marker_room();
}

BoundedRecord::BoundedRecord(const RecordParts& parts, std::span<const HeaderView> own, std::size_t largest) {
  const std::size_t fixed = least_size(own);
  if (fixed > largest) return;
  fits_ = true;
  std::size_t budget = largest - fixed;
  std::size_t headers_dropped = 0;
  for (const HeaderView& header : parts.headers) {
    const std::size_t size = header_wire_size(header.name, header.value);
    if (size > budget) {
      ++headers_dropped;
      continue;
    }
    headers_.push_back(header);
    budget -= size;
  }
  if (parts.key && parts.key->size() <= budget) {
    key_ = parts.key;
    budget -= parts.key->size();
  }
  if (parts.value) value_ = parts.value->substr(0, std::min(parts.value->size(), budget));
  headers_.insert(headers_.end(), own.begin(), own.end());
  if (parts.key && !key_) add_marker(0, headers::kKeyDropped, parts.key->size());
  if (headers_dropped != 0) add_marker(1, headers::kHeadersDropped, headers_dropped);
  if (parts.value && value_->size() < parts.value->size()) add_marker(2, headers::kValueTruncated, parts.value->size());
}

void BoundedRecord::add_marker(std::size_t slot, const char* name, std::size_t count) {
  marker_values_[slot] = std::to_string(count);
  headers_.push_back(HeaderView{name, marker_values_[slot]});
}

connectors::OutgoingMessage BoundedRecord::message() const {
  connectors::OutgoingMessage out;
  out.key = key_;
  out.value = value_;
  out.headers = headers_;
  return out;
}

std::size_t BoundedRecord::wire_size() const noexcept {
  return connectors::record_wire_size(key_ ? key_->size() : 0, value_ ? value_->size() : 0,
                                      connectors::headers_wire_size(headers_));
}

}  // namespace bloomgate::app
