#include "commit_protocol.h"

#include "periodic_checkpoints.h"
#include "transactional_commits.h"

namespace bloomgate::app {

std::unique_ptr<CommitProtocol> make_commit_protocol(ServiceContext& context, PartitionState& state,
                                                     OutputRouter& router) {
  if (context.config.kafka.guarantee == config::Guarantee::kExactlyOnce) {
    return std::make_unique<TransactionalCommits>(context, state, router);
  }
  return std::make_unique<PeriodicCheckpoints>(context, state, router);
}

}  // namespace bloomgate::app
