// The decide pipeline: order, halting, errors, inline mode. No timings.
#include "bloomgate/app/decide_pipeline.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>
#include <vector>

namespace bloomgate::app {
namespace {

struct Item {
  int value = 0;
  int result = 0;
  std::thread::id worked_on{};
};

using Pipeline = DecidePipeline<Item>;

bool square(Item& item) {
  item.result = item.value * item.value;
  item.worked_on = std::this_thread::get_id();
  return true;
}

// Takes every event in flight out, oldest first.
std::vector<Pipeline::Slot> take_all(Pipeline& pipeline) {
  std::vector<Pipeline::Slot> out;
  while (Pipeline::Slot* slot = pipeline.front()) {
    out.push_back(std::move(*slot));
    pipeline.pop();
  }
  return out;
}

TEST(DecidePipeline, ThreadedEventsComeBackInOrderWorkedOnAnotherThread) {
  Pipeline pipeline(8, true, square);
  std::vector<int> results;
  for (int i = 0; i < 1000; ++i) {
    if (pipeline.full()) {
      for (auto& slot : take_all(pipeline)) results.push_back(slot.event->result);
    }
    pipeline.push(Item{i});
  }
  const std::vector<Pipeline::Slot> rest = take_all(pipeline);
  for (const auto& slot : rest) results.push_back(slot.event->result);
  ASSERT_EQ(results.size(), 1000U);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(results[static_cast<std::size_t>(i)], i * i);
  ASSERT_FALSE(rest.empty());
  EXPECT_TRUE(rest.back().worked);
  EXPECT_NE(rest.back().event->worked_on, std::this_thread::get_id());
  EXPECT_TRUE(pipeline.empty());
}

TEST(DecidePipeline, InlineWorksInsidePushOnTheCallersThread) {
  Pipeline pipeline(4, false, square);
  pipeline.push(Item{3});
  Pipeline::Slot* slot = pipeline.ready();
  ASSERT_NE(slot, nullptr);
  EXPECT_TRUE(slot->worked);
  EXPECT_EQ(slot->event->result, 9);
  EXPECT_EQ(slot->event->worked_on, std::this_thread::get_id());
}

TEST(DecidePipeline, CapacityIsRoundedUpToAPowerOfTwoAndBoundsWhatIsInFlight) {
  Pipeline pipeline(5, true, square);
  for (int i = 0; i < 8; ++i) pipeline.push(Item{i});
  EXPECT_TRUE(pipeline.full());
  EXPECT_EQ(pipeline.in_flight(), 8U);
  EXPECT_THROW(pipeline.push(Item{8}), std::logic_error);
  pipeline.wait_for(4);
  for (int i = 0; i < 4; ++i) {
    Pipeline::Slot* slot = pipeline.ready();  // done: no wait needed
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(slot->event->result, i * i);
    pipeline.pop();
  }
  EXPECT_EQ(take_all(pipeline).size(), 4U);
}

// A dead letter that stops the service: nothing after it may be decided.
TEST(DecidePipeline, WorkThatAsksToHaltLeavesLaterEventsUnworkedUntilResumed) {
  for (const bool threaded : {true, false}) {
    Pipeline pipeline(16, threaded, [](Item& item) {
      square(item);
      return item.value != 2;
    });
    for (int i = 0; i < 5; ++i) pipeline.push(Item{i});
    const std::vector<Pipeline::Slot> slots = take_all(pipeline);
    ASSERT_EQ(slots.size(), 5U);
    for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(slots[i].worked, i <= 2) << "event " << i << " threaded " << threaded;
    EXPECT_EQ(slots[3].event->result, 0);
    EXPECT_TRUE(pipeline.halted());
    pipeline.resume();
    pipeline.push(Item{7});
    const std::vector<Pipeline::Slot> after = take_all(pipeline);
    ASSERT_EQ(after.size(), 1U);
    EXPECT_TRUE(after[0].worked);
    EXPECT_EQ(after[0].event->result, 49);
  }
}

// A rewind: the owner stops the work, then drops what is in flight.
TEST(DecidePipeline, HaltWaitsUntilEveryEventInFlightIsPastTheThread) {
  Pipeline pipeline(64, true, square);
  for (int i = 0; i < 50; ++i) pipeline.push(Item{i});
  pipeline.halt();
  std::size_t count = 0;
  while (pipeline.ready() != nullptr) {  // all done: none has to be waited for
    pipeline.pop();
    ++count;
  }
  EXPECT_EQ(count, 50U);
  EXPECT_TRUE(pipeline.empty());
  pipeline.push(Item{1});
  ASSERT_NE(pipeline.front(), nullptr);
  EXPECT_FALSE(pipeline.front()->worked);
  pipeline.pop();
  pipeline.resume();
  pipeline.push(Item{2});
  EXPECT_TRUE(pipeline.front()->worked);
}

TEST(DecidePipeline, AnExceptionComesBackWithItsEventAndHalts) {
  for (const bool threaded : {true, false}) {
    Pipeline pipeline(8, threaded, [](Item& item) -> bool {
      if (item.value == 1) throw std::runtime_error("bad event");
      return square(item);
    });
    for (int i = 0; i < 3; ++i) pipeline.push(Item{i});
    const std::vector<Pipeline::Slot> slots = take_all(pipeline);
    ASSERT_EQ(slots.size(), 3U);
    EXPECT_FALSE(slots[0].error);
    ASSERT_TRUE(slots[1].error);
    EXPECT_THROW(std::rethrow_exception(slots[1].error), std::runtime_error);
    EXPECT_FALSE(slots[2].worked);
  }
}

TEST(DecidePipeline, DestroyingAnIdlePipelineStopsItsThread) {
  for (int i = 0; i < 20; ++i) {
    Pipeline pipeline(4, true, square);
    if (i % 2 == 0) pipeline.push(Item{i});
  }
  SUCCEED();
}

}  // namespace
}  // namespace bloomgate::app
