// `bloomgate filter` driven in-process through streams.
#include "bloomgate/app/filter_command.h"

#include <gtest/gtest.h>

#include <sstream>

namespace bloomgate::app {
namespace {

const filters::TimePoint kT0 = filters::from_epoch_millis(1'700'000'000'000);

struct CommandOutput {
  std::string out;
  std::string err;
  FilterCommandResult result;
};

CommandOutput run(const std::string& input, FilterCommandOptions options, filters::TimePoint clock_time = kT0) {
  std::istringstream in(input);
  std::ostringstream out;
  std::ostringstream err;
  CommandOutput r;
  r.result = run_filter_command(options, in, out, err, [&] { return clock_time; });
  r.out = out.str();
  r.err = err.str();
  return r;
}

FilterCommandOptions options_with(std::chrono::nanoseconds ttl, bool timestamps) {
  FilterCommandOptions o;
  o.filter.ttl = ttl;
  o.filter.expected_per_ttl = 1000;
  o.timestamps = timestamps;
  return o;
}

TEST(FilterCommand, ForwardsOnlyNewKeys) {
  const CommandOutput r = run("a\nb\na\nc\nb\n\n\n", options_with(std::chrono::seconds(90), false));
  EXPECT_EQ(r.out, "a\nb\nc\n\n") << "the empty key is a key like any other";
  EXPECT_EQ(r.result.lines, 7U);
  EXPECT_EQ(r.result.forwarded, 4U);
  EXPECT_EQ(r.result.duplicates, 3U);
  EXPECT_EQ(r.err, "");
}

TEST(FilterCommand, TimestampsDecideTheWindow) {
  const std::string input =
      "1000\torder-1\n"
      "61000\torder-1\n"    // 60 s later: within 90 s, a duplicate
      "91001\torder-1\n"    // 90.001 s after the first sighting: new again
      "91002\torder-2\n";
  const CommandOutput r = run(input, options_with(std::chrono::seconds(90), true));
  EXPECT_EQ(r.out, "1000\torder-1\n91001\torder-1\n91002\torder-2\n");
}

TEST(FilterCommand, RefreshExtendsTheWindow) {
  FilterCommandOptions o = options_with(std::chrono::seconds(90), true);
  o.filter.refresh_on_duplicate = true;
  const CommandOutput r = run("1000\tk\n61000\tk\n121000\tk\n", o);
  EXPECT_EQ(r.out, "1000\tk\n") << "each sighting within 90 s of the previous one keeps the key alive";
}

TEST(FilterCommand, MalformedLinesAreReportedAndSkipped) {
  const CommandOutput r = run("1000\ta\nno tab here\n-\tb\n12x\tc\n2000\ta\n3000\td\n", options_with(std::chrono::seconds(90), true));
  EXPECT_EQ(r.out, "1000\ta\n3000\td\n");
  EXPECT_EQ(r.result.malformed, 3U);
  EXPECT_EQ(r.err,
            "line 2: expected EPOCH_MILLIS<TAB>KEY, found no tab, skipped\n"
            "line 3: \"-\" is not a timestamp in epoch milliseconds, skipped\n"
            "line 4: \"12x\" is not a timestamp in epoch milliseconds, skipped\n");
}

TEST(FilterCommand, StatsAreOneJsonObject) {
  FilterCommandOptions o = options_with(std::chrono::seconds(90), false);
  o.stats = true;
  const CommandOutput r = run("a\nb\na\n", o);
  EXPECT_EQ(r.err.rfind("{\"type\":\"time_limited\",\"k\":16,\"l\":140,\"slices\":156,", 0), 0U) << r.err;
  for (const char* field : {"\"bits\":", "\"elements\":2,", "\"bits_per_element\":", "\"estimated_fpr\":",
                            "\"forwarded\":2,", "\"duplicates\":1,"}) {
    EXPECT_NE(r.err.find(field), std::string::npos) << field;
  }
  EXPECT_EQ(r.err.back(), '\n');
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

}  // namespace
}  // namespace bloomgate::app
