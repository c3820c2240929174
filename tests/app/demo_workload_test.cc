// The demo's stream: deterministic, with the shape it promises, and an exact answer to compare with.
#include "bloomgate/app/demo_workload.h"

#include <gtest/gtest.h>

#include <set>

namespace bloomgate::app {
namespace {

TEST(Workload, IsDeterministicForASeed) {
  WorkloadOptions o;
  o.events = 1000;
  Workload a(o);
  Workload b(o);
  for (int i = 0; i < 1000; ++i) {
    const WorkloadEvent x = a.next();
    const WorkloadEvent y = b.next();
    ASSERT_EQ(x.key, y.key);
    ASSERT_EQ(x.timestamp_ms, y.timestamp_ms);
    ASSERT_EQ(x.value, y.value);
  }
}

TEST(Workload, HasTheRepeatSharesItPromises) {
  WorkloadOptions o;  // seed 42, 30% repeats within the TTL, 5% beyond, 20,000 events/s, TTL 10 s
  o.events = 400'000;
  Workload stream(o);
  ExactAnswer exact(o.ttl, false);
  std::uint64_t duplicates = 0;
  std::uint64_t late = 0;
  std::int64_t last_ts = 0;
  for (std::uint64_t i = 0; i < o.events; ++i) {
    const WorkloadEvent e = stream.next();
    ASSERT_GE(e.timestamp_ms, last_ts);
    last_ts = e.timestamp_ms;
    ASSERT_NE(e.value.find("\"order_id\":\"" + e.key + "\""), std::string::npos);
    if (!exact.observe(e.key, e.timestamp_ms)) {
      ++duplicates;
    } else if (exact.last_new_was_late(std::chrono::hours(1'000))) {
      ++late;
    }
  }
  const double duplicate_share = static_cast<double>(duplicates) / static_cast<double>(o.events);
  const double beyond_share = static_cast<double>(late) / static_cast<double>(o.events);
  // Repeats beyond the TTL start after the first TTL; over 20 s (two TTLs) the shares settle near their
  // settings.
  EXPECT_NEAR(duplicate_share, 0.30, 0.03);
  EXPECT_NEAR(beyond_share, 0.05 * 10.0 / 20.0, 0.01) << "only the second half of the stream has stale keys";
  EXPECT_EQ(last_ts, o.start_ms + 19'999);
}

TEST(ExactAnswer, RecordsOnlyNewSightingsUnlessRefreshing) {
  ExactAnswer plain(std::chrono::milliseconds(100), false);
  EXPECT_TRUE(plain.observe("k", 0));
  EXPECT_FALSE(plain.observe("k", 90));
  EXPECT_TRUE(plain.observe("k", 101));
  EXPECT_TRUE(plain.last_new_was_late(std::chrono::milliseconds(1)));
  EXPECT_FALSE(plain.last_new_was_late(std::chrono::milliseconds(0)));
  ExactAnswer refreshing(std::chrono::milliseconds(100), true);
  EXPECT_TRUE(refreshing.observe("k", 0));
  EXPECT_FALSE(refreshing.observe("k", 90));
  EXPECT_FALSE(refreshing.observe("k", 180));
}

}  // namespace
}  // namespace bloomgate::app
