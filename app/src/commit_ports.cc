#include "commit_ports.h"

#include "service_context.h"
#include "state_topic_publisher.h"

namespace bloomgate::app {
namespace {

// The loop's transactional producer, with its consumer's group metadata for the offsets.
class KafkaTransactions final : public Transactions {
 public:
  explicit KafkaTransactions(ServiceContext& context) : context_(context), transaction_(*context.producer) {}

  void init(Clock::time_point deadline) override { transaction_.init(deadline); }
  connectors::KafkaError ensure_open() override { return transaction_.ensure_open(); }
  bool is_open() const override { return transaction_.is_open(); }
  TransactionResult commit(const connectors::TopicPartitions& offsets, Clock::time_point deadline) override {
    return transaction_.commit(offsets, *context_.consumer, deadline);
  }
  TransactionResult abort(const connectors::KafkaError& why, Clock::time_point deadline) override {
    return transaction_.abort(why, deadline);
  }

 private:
  ServiceContext& context_;
  OutputTransaction transaction_;
};

}  // namespace

connectors::KafkaError KafkaCommitPorts::flush(std::chrono::milliseconds timeout) {
  return context_.producer->flush(timeout);
}

int KafkaCommitPorts::in_flight() const { return context_.producer->outq_len(); }

connectors::KafkaError KafkaCommitPorts::commit(const connectors::TopicPartitions& offsets,
                                                connectors::CommitMode mode) {
  return context_.consumer->commit(offsets, mode);
}

connectors::KafkaError KafkaCommitPorts::seek(const connectors::TopicPartitions& positions,
                                              std::chrono::milliseconds timeout) {
  return context_.consumer->seek(positions, timeout);
}

CommitPorts KafkaCommitPorts::ports() {
  return {*this, *this, records_, [this] { return std::make_unique<KafkaTransactions>(context_); },
          [this]() -> std::unique_ptr<StateTopicSink> {
            if (context_.config.state.topic.empty()) return nullptr;
            return std::make_unique<KafkaStateTopicSink>(context_);
          },
          context_.config.state.topic.empty() ? nullptr : &state_records_};
}

}  // namespace bloomgate::app
