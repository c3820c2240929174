// Which source an assigned partition's state comes from (app/src/state_topic_restore.h): whether the local
// checkpoint is current against the group's committed offset, and which usable checkpoint is further ahead.
#include <gtest/gtest.h>

#include "state_topic_restore.h"

namespace bloomgate::app {
namespace {

TEST(RestoreSource, TheLocalCheckpointIsCurrentAtOrPastTheGroupsCommit) {
  EXPECT_TRUE(local_checkpoint_is_current(500, 500));
  EXPECT_TRUE(local_checkpoint_is_current(501, 500)) << "exactly_once writes the checkpoint after the commit";
  EXPECT_FALSE(local_checkpoint_is_current(499, 500)) << "another member went further";
  EXPECT_TRUE(local_checkpoint_is_current(0, connectors::kNoOffset)) << "the group has no commit to be behind";
  EXPECT_FALSE(local_checkpoint_is_current(500, std::nullopt)) << "a commit that could not be asked is not known";
}

TEST(RestoreSource, TheCheckpointFurtherAheadWinsAndTheLocalOneOnATie) {
  EXPECT_EQ(pick_restore_source(500, std::nullopt), RestoreSource::kLocal);
  EXPECT_EQ(pick_restore_source(std::nullopt, 500), RestoreSource::kStateTopic);
  EXPECT_EQ(pick_restore_source(400, 500), RestoreSource::kStateTopic);
  EXPECT_EQ(pick_restore_source(500, 400), RestoreSource::kLocal);
  EXPECT_EQ(pick_restore_source(500, 500), RestoreSource::kLocal) << "a tie needs no write of the state topic's";
  EXPECT_EQ(pick_restore_source(std::nullopt, std::nullopt), RestoreSource::kRebuild);
}

TEST(RestoreSource, NamesAreTheMetricsLabels) {
  EXPECT_EQ(restore_source_name(RestoreSource::kLocal), "local");
  EXPECT_EQ(restore_source_name(RestoreSource::kStateTopic), "state_topic");
  EXPECT_EQ(restore_source_name(RestoreSource::kRebuild), "rebuild");
}

}  // namespace
}  // namespace bloomgate::app
