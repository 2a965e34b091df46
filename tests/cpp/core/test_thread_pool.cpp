// The thread pool's helpers: parallel_for and consume_as_produced (decode while fetching).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/thread_pool.hpp"

using namespace lazycube;

TEST(ThreadPool, ParallelForRunsEveryIndexOnceAndRethrows) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(hits.size(), [&](std::size_t i) { ++hits[i]; }, pool);
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_THROW(parallel_for(100, [](std::size_t i) { if (i == 42) throw std::runtime_error("42"); }, pool),
               std::runtime_error);
}

// Nested parallel_for (a batch's channels in parallel, each channel's windows in parallel):
// every index runs once at every level and nothing deadlocks, on pools smaller than the fan-out.
TEST(ThreadPool, NestedParallelForRunsEveryIndexOnce) {
  for (std::size_t threads : {2u, 3u, 5u}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 20; ++round) {
      std::vector<std::atomic<int>> hits(6 * 40 * 5);
      parallel_for(6, [&](std::size_t a) {
        parallel_for(40, [&](std::size_t b) {
          parallel_for(5, [&](std::size_t c) { ++hits[(a * 40 + b) * 5 + c]; }, pool);
        }, pool);
      }, pool);
      for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << threads << " threads, round " << round;
    }
    EXPECT_THROW(parallel_for(4, [&](std::size_t) {
                   parallel_for(30, [](std::size_t i) { if (i == 17) throw std::runtime_error("17"); }, pool);
                 }, pool),
                 std::runtime_error);
  }
}

// Called on a worker, parallel_for spreads over the idle workers: two bodies must be inside at
// the same time (with the old inline rule they ran one after the other and this timed out).
TEST(ThreadPool, NestedParallelForOnAWorkerRunsInParallel) {
  ThreadPool pool(3);
  std::mutex m;
  std::condition_variable cv;
  int inside = 0, met = 0;  // bodies that saw the other one inside
  std::promise<void> done;
  pool.submit([&] {
    parallel_for(2, [&](std::size_t) {
      std::unique_lock lock(m);
      ++inside;
      cv.notify_all();
      if (cv.wait_for(lock, std::chrono::seconds(10), [&] { return inside >= 2; })) ++met;
    }, pool);
    done.set_value();
  });
  done.get_future().wait();
  EXPECT_EQ(met, 2);
}

TEST(ConsumeAsProduced, ConsumesEveryItemOnceOnSeveralThreads) {
  ThreadPool pool(3);
  constexpr std::size_t n = 2000;
  std::vector<std::atomic<int>> hits(n);
  std::mutex m;
  std::set<std::thread::id> threads;
  consume_as_produced(
      [&](const std::function<void(std::size_t)>& push) {
        for (std::size_t i = 0; i < n; ++i) push(i);
      },
      [&](std::size_t i) {
        ++hits[i];
        std::lock_guard lock(m);
        threads.insert(std::this_thread::get_id());
      },
      pool);
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_GE(threads.size(), 1u);
}

// Items are consumed while the producer is still running: the producer pushes one item, then
// waits until it has been consumed before pushing the next (it would wait forever if the
// consumers only started once the producer returned).
TEST(ConsumeAsProduced, ConsumesWhileTheProducerRuns) {
  ThreadPool pool(2);
  std::mutex m;
  std::condition_variable cv;
  std::size_t consumed = 0;
  bool timed_out = false;
  consume_as_produced(
      [&](const std::function<void(std::size_t)>& push) {
        for (std::size_t i = 0; i < 5; ++i) {
          push(i);
          std::unique_lock lock(m);
          if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return consumed > i; })) timed_out = true;
        }
      },
      [&](std::size_t) {
        {
          std::lock_guard lock(m);
          ++consumed;
        }
        cv.notify_all();
      },
      pool);
  EXPECT_FALSE(timed_out);
  EXPECT_EQ(consumed, 5u);
}

// A consumer's exception reaches the caller; push then throws inside the producer, which stops
// it (the producer never sees the exception type: it just unwinds).
TEST(ConsumeAsProduced, ConsumerErrorStopsTheProducer) {
  ThreadPool pool(2);
  std::atomic<std::size_t> pushed{0};
  bool producer_unwound = false;
  EXPECT_THROW(consume_as_produced(
                   [&](const std::function<void(std::size_t)>& push) {
                     struct Flag {
                       bool& f;
                       ~Flag() { f = true; }
                     } flag{producer_unwound};
                     for (std::size_t i = 0; i < 100000; ++i) {
                       push(i);
                       ++pushed;
                       std::this_thread::sleep_for(std::chrono::microseconds(50));
                     }
                   },
                   [&](std::size_t i) {
                     if (i == 3) throw std::invalid_argument("item 3 is bad");
                   },
                   pool),
               std::invalid_argument);
  EXPECT_TRUE(producer_unwound);
  EXPECT_LT(pushed.load(), 100000u);
}

TEST(ConsumeAsProduced, ProducerErrorIsRethrownAfterConsumingWhatArrived) {
  ThreadPool pool(2);
  std::atomic<int> consumed{0};
  EXPECT_THROW(consume_as_produced(
                   [&](const std::function<void(std::size_t)>& push) {
                     push(0);
                     push(1);
                     throw std::out_of_range("fetch failed");
                   },
                   [&](std::size_t) { ++consumed; }, pool),
               std::out_of_range);
  EXPECT_LE(consumed.load(), 2);
}

// Called from one of the pool's own workers (a batch assembled on the pool reading over the
// network) it consumes on that thread alone, without waiting for the busy pool.
TEST(ConsumeAsProduced, NestedInAPoolWorker) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  parallel_for(4, [&](std::size_t) {
    consume_as_produced(
        [&](const std::function<void(std::size_t)>& push) {
          for (std::size_t i = 0; i < 50; ++i) push(i);
        },
        [&](std::size_t i) { total += static_cast<int>(i); }, pool);
  }, pool);
  EXPECT_EQ(total.load(), 4 * (49 * 50 / 2));
}
