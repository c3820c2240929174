// `bloomgate filter` driven in-process through streams.
#include "bloomgate/app/filter_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <sstream>
#include <streambuf>
#include <stdexcept>
#include <vector>

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

// Epoch milliseconds from 1970 to 2099 only (docs/decisions/filter-timestamp-range.md): beyond that a
// timestamp overflows the filters' int64 nanoseconds, or (one in microseconds) moves the filter's present so
// far ahead that no later key expires.
TEST(FilterCommand, TimestampsOutsideTheRangeAreMalformedLines) {
  const CommandOutput r = run("1000\ta\n9223372036855\tb\n1700000000000000\tc\n99999999999999999999\td\n"
                              "4102444799999\te\n4102444800000\tf\n",
                              options_with(std::chrono::seconds(90), true));
  EXPECT_EQ(r.out, "1000\ta\n4102444799999\te\n");
  EXPECT_EQ(r.result.malformed, 4U);
  const std::string outside = " is outside 1970-01-01..2099-12-31 in epoch milliseconds (microseconds or "
                              "nanoseconds are too large), skipped\n";
  EXPECT_EQ(r.err, "line 2: \"9223372036855\"" + outside + "line 3: \"1700000000000000\"" + outside +
                       "line 4: \"99999999999999999999\"" + outside + "line 6: \"4102444800000\"" + outside);
}

TEST(FilterCommand, ControlCharactersInAReportedTimestampAreEscaped) {
  const CommandOutput r = run("1000\r\ta\n\x01\xff\tb\n", options_with(std::chrono::seconds(90), true));
  EXPECT_EQ(r.err,
            "line 1: \"1000\\r\" is not a timestamp in epoch milliseconds, skipped\n"
            "line 2: \"\\x01\\xFF\" is not a timestamp in epoch milliseconds, skipped\n");
}

TEST(FilterCommand, StatsAreOneJsonObject) {
  FilterCommandOptions o = options_with(std::chrono::seconds(90), false);
  o.stats = true;
  const CommandOutput r = run("a\nb\na\n", o);
  EXPECT_EQ(r.err.rfind("{\"type\":\"time_limited\",\"k\":16,\"l\":140,\"slices\":156,", 0), 0U) << r.err;
  for (const char* field : {"\"bits\":", "\"memory_bytes\":", "\"elements\":2,", "\"bits_per_element\":",
                            "\"cell_bits_per_element\":", "\"estimated_fpr\":", "\"forwarded\":2,", "\"duplicates\":1,"}) {
    EXPECT_NE(r.err.find(field), std::string::npos) << field;
  }
  EXPECT_EQ(r.err.back(), '\n');
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

// The aging-fingerprint filter through the command: the type by its name, duplicates within the TTL dropped,
// and its whole memory in the stats.
TEST(FilterCommand, AgingFingerprintByName) {
  FilterCommandOptions o = options_with(std::chrono::seconds(90), false);
  o.filter.type = filters::FilterType::kAgingFingerprint;
  o.stats = true;
  const CommandOutput r = run("a\nb\na\nc\n", o);
  EXPECT_EQ(r.out, "a\nb\nc\n");
  EXPECT_EQ(r.err.rfind("{\"type\":\"aging_fingerprint\",", 0), 0U) << r.err;
  EXPECT_EQ(r.err.find("\"memory_bytes\":0,"), std::string::npos) << r.err;
}

// A stream buffer whose device fails, as a full disk or a closed pipe does: the write or read call
// fails with `error` in errno once `good_bytes` have passed.
class FailingBuffer : public std::streambuf {
 public:
  FailingBuffer(std::size_t good_bytes, int error) : good_bytes_(good_bytes), error_(error) {}

 protected:
  int_type overflow(int_type c) override {
    if (passed_ >= good_bytes_) return fail();
    ++passed_;
    return traits_type::not_eof(c);
  }
  int_type underflow() override {
    // std::istream turns an exception from the buffer into badbit, as libstdc++'s filebuf does on a
    // failed read(2).
    fail();
    throw std::ios_base::failure("read failed");
  }

 private:
  int_type fail() {
    errno = error_;
    return traits_type::eof();
  }
  std::size_t good_bytes_;
  int error_;
  std::size_t passed_ = 0;
};

TEST(FilterCommandErrors, AFailedWriteStopsTheCommandWithTheSystemsReason) {
  std::istringstream in("a\nb\nc\n");
  FailingBuffer device(3, ENOSPC);  // "a\nb" fits, the rest does not
  std::ostream out(&device);
  std::ostringstream err;
  const FilterCommandResult r =
      run_filter_command(options_with(std::chrono::seconds(90), false), in, out, err, [] { return kT0; });
  EXPECT_EQ(r.io_error, "cannot write the output: No space left on device");
  EXPECT_LT(r.lines, 3U) << "the command stops at the failed write";
}

TEST(FilterCommandErrors, AFailedReadStopsTheCommandWithTheSystemsReason) {
  FailingBuffer device(0, EISDIR);
  std::istream in(&device);
  std::ostringstream out;
  std::ostringstream err;
  const FilterCommandResult r =
      run_filter_command(options_with(std::chrono::seconds(90), false), in, out, err, [] { return kT0; });
  EXPECT_EQ(r.io_error, "cannot read the input: Is a directory");
}

TEST(FilterCommandErrors, CleanStreamsReportNoError) {
  EXPECT_EQ(run("a\nb\n", options_with(std::chrono::seconds(90), false)).result.io_error, "");
}

// A bloom filter sized for 100 keys and given 20,000 distinct ones reports most of them as seen; the
// command says so once, and says what to change.
TEST(FilterCommand, AnOverfilledFilterIsWarnedAboutOnce) {
  FilterCommandOptions o = options_with(std::chrono::seconds(90), false);
  o.filter.type = filters::FilterType::kBloom;
  o.filter.expected_per_ttl = 100;
  std::string input;
  for (int i = 0; i < 20'000; ++i) input += "key-" + std::to_string(i) + "\n";
  const CommandOutput r = run(input, o);
  EXPECT_GT(r.result.duplicates, 5'000U) << "distinct keys reported as seen";
  EXPECT_EQ(r.err.find("bloomgate filter: warning: the bloom filter's estimated false-positive rate is "), 0U) << r.err;
  EXPECT_NE(r.err.find("raise --expected\n"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(FilterCommand, AFilterWithinItsSizeIsNotWarnedAbout) {
  FilterCommandOptions o = options_with(std::chrono::seconds(90), false);
  o.filter.type = filters::FilterType::kBloom;
  o.filter.expected_per_ttl = 20'000;
  std::string input;
  for (int i = 0; i < 20'000; ++i) input += "key-" + std::to_string(i) + "\n";
  EXPECT_EQ(run(input, o).err, "");
}

FilterCommandOptions keyed_by_fields(std::vector<std::size_t> fields, char delimiter = '\t') {
  FilterCommandOptions o = options_with(std::chrono::seconds(90), false);
  o.fields = std::move(fields);
  o.delimiter = delimiter;
  return o;
}

TEST(FilterCommandFields, TheChosenColumnsAreTheKeyAndLinesAreWrittenWhole) {
  const CommandOutput r = run("t1\tx\te1\nt1\ty\te1\nt2\tx\te1\nt1\tz\te2\n", keyed_by_fields({1, 3}));
  EXPECT_EQ(r.out, "t1\tx\te1\nt2\tx\te1\nt1\tz\te2\n") << "(t1, e1) is seen twice; column 2 is not part of the key";
  EXPECT_EQ(r.result.duplicates, 1U);
}

TEST(FilterCommandFields, CsvWithAChosenDelimiterAndOneField) {
  const CommandOutput r = run("a,1\nb,1\na,2\n", keyed_by_fields({2}, ','));
  EXPECT_EQ(r.out, "a,1\na,2\n");
}

// Joined with the delimiter, ("a", "b,c") and ("a,b", "c") would be one key; a field with the delimiter in
// it cannot occur (it splits), but empty fields and the order of fields can make naive joins collide too.
TEST(FilterCommandFields, SeveralFieldsAreEncodedNotJoined) {
  const CommandOutput r = run("ab,,c\na,b,c\n,ab,c\n", keyed_by_fields({1, 2}, ','));
  EXPECT_EQ(r.out, "ab,,c\na,b,c\n,ab,c\n") << "(ab, ''), (a, b) and ('', ab) are three keys";
  const CommandOutput reordered = run("x,y\ny,x\n", keyed_by_fields({2, 1}, ','));
  EXPECT_EQ(reordered.out, "x,y\ny,x\n");
}

TEST(FilterCommandFields, LinesWithTooFewFieldsAreReportedAndSkipped) {
  const CommandOutput r = run("a\tb\tc\na\tb\n\na\tb\tc\n", keyed_by_fields({3, 1}));
  EXPECT_EQ(r.out, "a\tb\tc\n");
  EXPECT_EQ(r.result.malformed, 2U);
  EXPECT_EQ(r.err, "line 2: has 2 fields, --fields needs 3, skipped\nline 3: has 1 field, --fields needs 3, skipped\n");
}

TEST(FilterCommandFields, FieldZeroIsRefused) {
  EXPECT_THROW(run("a\n", keyed_by_fields({1, 0})), std::invalid_argument);
}

TEST(FilterCommandFields, WithTimestampsTheFieldsAreThoseAfterTheTimestamp) {
  FilterCommandOptions o = keyed_by_fields({2});
  o.timestamps = true;
  const CommandOutput r = run("1000\tx\tk\n2000\ty\tk\n200000\tz\tk\n", o);
  EXPECT_EQ(r.out, "1000\tx\tk\n200000\tz\tk\n") << "the second field after the timestamp is the key, k; 90 s TTL";
}

}  // namespace
}  // namespace bloomgate::app
