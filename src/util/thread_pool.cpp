#include "lazycube/util/thread_pool.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

namespace lazycube {

namespace {

thread_local const ThreadPool* current_pool = nullptr;

std::size_t default_threads() {
  if (const char* env = std::getenv("LAZYCUBE_NUM_THREADS")) {
    long n = std::strtol(env, nullptr, 10);
    if (n > 0) return static_cast<std::size_t>(n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 2 : hw;
}

// The global pool is leaked on purpose (no join at exit while other statics die) and dropped
// in a forked child, whose copy has no worker threads.
ThreadPool* global_pool = nullptr;
std::mutex global_mutex;
std::once_flag atfork_once;

}  // namespace

ThreadPool::ThreadPool(std::size_t threads) {
  if (threads == 0) threads = 1;
  workers_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::submit(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

bool ThreadPool::on_worker_thread() const { return current_pool == this; }

void ThreadPool::run() {
  current_pool = this;
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

ThreadPool& ThreadPool::global() {
  std::call_once(atfork_once, [] {
    // In the child the pool's threads do not exist: forget it (leak) and build a new one.
    pthread_atfork(nullptr, nullptr, [] { global_pool = nullptr; new (&global_mutex) std::mutex(); });
  });
  std::lock_guard lock(global_mutex);
  if (global_pool == nullptr) global_pool = new ThreadPool(default_threads());
  return *global_pool;
}

void parallel_for(std::size_t n, const std::function<void(std::size_t)>& body, ThreadPool& pool) {
  if (n == 0) return;
  if (n == 1 || pool.on_worker_thread() || pool.size() <= 1) {
    for (std::size_t i = 0; i < n; ++i) body(i);
    return;
  }
  // Work-claiming loop run by helpers and the caller; the caller waits for stragglers.
  struct State {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex mutex;
    std::condition_variable done_cv;
    std::size_t running = 0;
  };
  auto state = std::make_shared<State>();
  auto work = [state, n, &body] {
    for (;;) {
      std::size_t i = state->next.fetch_add(1);
      if (i >= n || state->failed.load()) break;
      try {
        body(i);
      } catch (...) {
        std::lock_guard lock(state->mutex);
        if (!state->error) state->error = std::current_exception();
        state->failed = true;
      }
    }
  };
  // The caller works too: pool.size() - 1 helpers keep the threads at the pool's size (one per
  // core), instead of oversubscribing the cores by one.
  const std::size_t helpers = std::min(pool.size() - 1, n - 1);
  state->running = helpers;
  for (std::size_t h = 0; h < helpers; ++h) {
    pool.submit([state, work] {
      work();
      std::lock_guard lock(state->mutex);
      if (--state->running == 0) state->done_cv.notify_all();
    });
  }
  work();
  std::unique_lock lock(state->mutex);
  state->done_cv.wait(lock, [&] { return state->running == 0; });
  if (state->error) std::rethrow_exception(state->error);
}

}  // namespace lazycube
