// LoadThreads: threads for blocking loads that must not wait behind one another (a network read
// waiting out a Retry-After holds its thread for a second). A task starts at once on an idle
// thread, or on a new one when none is idle; a thread goes back to waiting when its task ends,
// so a run of short-lived tasks (fetch-ahead's rounds) reuses the same few threads instead of
// starting one per task. Threads are joined on destruction, after the tasks under way.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lazycube::batch {

class LoadThreads {
 public:
  LoadThreads() = default;
  ~LoadThreads();
  LoadThreads(const LoadThreads&) = delete;
  LoadThreads& operator=(const LoadThreads&) = delete;

  // Runs `task` on a thread of its own (idle or new); when no new thread can start, runs it
  // here. `task` must not throw.
  void run(std::function<void()> task);
  // Threads started so far (idle or busy): the most tasks that ran at once.
  std::size_t threads() const;
  // Threads waiting for a task now (less the tasks queued).
  std::size_t idle() const;

 private:
  void serve();

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;  // threads not running a task, less the tasks queued
  bool stopping_ = false;
};

}  // namespace lazycube::batch
