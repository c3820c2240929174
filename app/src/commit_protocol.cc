#include "commit_protocol.h"

#include <utility>

#include "periodic_checkpoints.h"
#include "transactional_commits.h"

namespace bloomgate::app {

std::unique_ptr<CommitProtocol> make_commit_protocol(ServiceContext& context, PartitionState& state, CommitPorts ports) {
  if (context.config.kafka.guarantee == config::Guarantee::kExactlyOnce) {
    return std::make_unique<TransactionalCommits>(context, state, std::move(ports));
  }
  return std::make_unique<PeriodicCheckpoints>(context, state, ports);
}

}  // namespace bloomgate::app
