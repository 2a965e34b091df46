// A bounded pool of worker threads shared by the process for decode and assembly work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lazycube {

class ThreadPool {
 public:
  explicit ThreadPool(std::size_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  std::size_t size() const { return workers_.size(); }
  // Workers waiting for a task just now (a hint: one may take a task the next instant).
  std::size_t idle() const { return idle_.load(std::memory_order_relaxed); }
  void submit(std::function<void()> task);

  // The process-wide pool, sized to the hardware threads (LAZYCUBE_NUM_THREADS overrides).
  // Re-created lazily in a forked child.
  static ThreadPool& global();

 private:
  void run();
  std::vector<std::thread> workers_;
  std::deque<std::function<void()>> tasks_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<std::size_t> idle_{0};
};

// Runs body(i) for i in [0, n) on the pool plus the calling thread and waits for all of them.
// The first exception thrown by any call is rethrown here (the rest of the work is skipped).
// May be called from a pool worker (nested): the caller only ever waits for running helpers.
void parallel_for(std::size_t n, const std::function<void(std::size_t)>& body,
                  ThreadPool& pool = ThreadPool::global());

// Overlaps a producer with work on the pool: runs produce(push) on a thread of its own, and
// consume(i) on the pool plus the calling thread for every item index i the producer pushes
// (each once, in arrival order, several at a time), returning when the producer has returned
// and every pushed item is consumed. `push` may be called from any thread, one call at a time.
// The first exception (from produce or consume) is rethrown here; after it, push throws to
// stop the producer and the items not yet consumed are skipped. Used to decode chunks while
// later ones are still arriving from the network.
void consume_as_produced(const std::function<void(const std::function<void(std::size_t)>& push)>& produce,
                         const std::function<void(std::size_t)>& consume, ThreadPool& pool = ThreadPool::global());

}  // namespace lazycube
