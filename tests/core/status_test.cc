// core/status.h: Status codes (they are exit codes), Expected<T> and the macros.
#include "fleetplan/core/status.h"

#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace fleetplan {
namespace {

TEST(StatusTest, CodesArePinnedExitCodes) {
  EXPECT_EQ(static_cast<int>(StatusCode::kOk), 0);
  EXPECT_EQ(static_cast<int>(StatusCode::kCheckFailed), 1);
  EXPECT_EQ(static_cast<int>(StatusCode::kUsage), 2);
  EXPECT_EQ(static_cast<int>(StatusCode::kInvalidInput), 3);
  EXPECT_EQ(static_cast<int>(StatusCode::kInternal), 70);
}

TEST(StatusTest, DefaultIsOk) {
  const Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.exit_code(), 0);
  EXPECT_EQ(s.message(), "");
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(StatusTest, HelpersSetCodeAndMessage) {
  const Status invalid = InvalidInput("bad value");
  EXPECT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(invalid.exit_code(), 3);
  EXPECT_EQ(invalid.message(), "bad value");
  EXPECT_EQ(UsageError("no verb").exit_code(), 2);
  EXPECT_EQ(InternalError("bug").exit_code(), 70);
  EXPECT_EQ(Status(StatusCode::kCheckFailed, "does not fit").exit_code(), 1);
}

TEST(ExpectedTest, HoldsValueOrStatus) {
  Expected<int> good = 42;
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(static_cast<bool>(good));
  EXPECT_EQ(good.value(), 42);
  EXPECT_EQ(*good, 42);
  *good = 7;
  EXPECT_EQ(good.value(), 7);

  const Expected<int> bad = InvalidInput("nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(bad.status().message(), "nope");
}

TEST(ExpectedTest, MoveOnlyValuesAndArrow) {
  Expected<std::unique_ptr<std::string>> e = std::make_unique<std::string>("abc");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->size(), 3u);
  std::unique_ptr<std::string> owned = std::move(e).value();
  EXPECT_EQ(*owned, "abc");

  Expected<std::string> s = std::string("hello");
  EXPECT_EQ(s->size(), 5u);
  Status taken = Expected<std::string>(UsageError("u")).take_status();
  EXPECT_EQ(taken.code(), StatusCode::kUsage);
}

Expected<int> ParsePositive(int v) {
  if (v <= 0) return InvalidInput("not positive");
  return v;
}

Status CheckAll(int a, int b) {
  FP_RETURN_IF_ERROR(ParsePositive(a).ok() ? Status::Ok() : InvalidInput("first"));
  FP_RETURN_IF_ERROR(ParsePositive(b).ok() ? Status::Ok() : InvalidInput("second"));
  return Status::Ok();
}

Expected<int> Sum(int a, int b) {
  FP_ASSIGN_OR_RETURN(const int x, ParsePositive(a));
  FP_ASSIGN_OR_RETURN(const int y, ParsePositive(b));
  return x + y;
}

TEST(MacrosTest, ReturnIfErrorStopsAtTheFirstFailure) {
  EXPECT_TRUE(CheckAll(1, 2).ok());
  EXPECT_EQ(CheckAll(0, 0).message(), "first");
  EXPECT_EQ(CheckAll(1, 0).message(), "second");
}

TEST(MacrosTest, AssignOrReturnPropagatesTheStatus) {
  EXPECT_EQ(Sum(2, 3).value(), 5);
  const Expected<int> failed = Sum(2, -1);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "not positive");
}

using StatusDeathTest = ::testing::Test;

TEST_F(StatusDeathTest, AssertAbortsWithTheCondition) {
  EXPECT_DEATH(FP_ASSERT(1 + 1 == 3), "assertion failed: 1 \\+ 1 == 3");
}

TEST_F(StatusDeathTest, ExpectedFromOkStatusIsABug) {
  EXPECT_DEATH({ Expected<int> e = Status::Ok(); (void)e; }, "Expected constructed from an ok Status");
}

}  // namespace
}  // namespace fleetplan
