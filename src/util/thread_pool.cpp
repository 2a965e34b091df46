#include "util/thread_pool.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

namespace lazycube {

namespace {

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

void ThreadPool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      if (!stopping_ && tasks_.empty()) {
        ++idle_;
        cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        --idle_;
      }
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
  if (n == 1 || pool.size() <= 1) {
    for (std::size_t i = 0; i < n; ++i) body(i);
    return;
  }
  // Work-claiming loop run by helpers and the caller. The caller waits only for helpers that
  // started before it ran out of work; a helper that starts later finds the loop closed and
  // returns at once. So a caller never waits on a task queued behind it, and parallel_for may
  // be nested on a pool worker (a batch's channels in parallel, each channel's windows in
  // parallel) without deadlock: every wait is for a thread that is running.
  struct State {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex mutex;
    std::condition_variable done_cv;
    std::size_t active = 0;  // helpers inside the loop
    bool closed = false;     // the caller is done claiming: late helpers leave
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
  for (std::size_t h = 0; h < helpers; ++h) {
    pool.submit([state, work] {
      {
        std::lock_guard lock(state->mutex);
        if (state->closed) return;  // `body` may be gone: touch nothing but the state
        ++state->active;
      }
      work();
      std::lock_guard lock(state->mutex);
      if (--state->active == 0) state->done_cv.notify_all();
    });
  }
  work();
  std::unique_lock lock(state->mutex);
  state->closed = true;
  state->done_cv.wait(lock, [&] { return state->active == 0; });
  // Taken out of the state under the lock: the caller then holds the exception's last
  // reference, and it is destroyed on this thread. Left in the state, a helper's task (which
  // shares the state) could drop the last reference after the caller read the exception, a
  // destruction ThreadSanitizer reports as a race (the reference count lives in uninstrumented
  // libstdc++, so it cannot see the order).
  const std::exception_ptr error = std::exchange(state->error, nullptr);
  lock.unlock();
  if (error) std::rethrow_exception(error);
}

namespace {
struct ProducerStopped {};  // thrown by push once a consumer failed: unwinds the producer
}  // namespace

void consume_as_produced(const std::function<void(const std::function<void(std::size_t)>& push)>& produce,
                         const std::function<void(std::size_t)>& consume, ThreadPool& pool) {
  struct Shared {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::size_t> ready;
    bool produced = false;  // the producer returned (or threw)
    bool stop = false;      // an error: consumers quit, push throws
    std::exception_ptr error;
    void fail(std::exception_ptr e) {
      {
        std::lock_guard lock(mutex);
        if (!error) error = std::move(e);
        stop = true;
      }
      cv.notify_all();
    }
  } shared;
  std::thread producer([&] {
    try {
      produce([&](std::size_t item) {
        {
          std::lock_guard lock(shared.mutex);
          if (shared.stop) throw ProducerStopped{};
          shared.ready.push_back(item);
        }
        shared.cv.notify_one();
      });
    } catch (const ProducerStopped&) {
    } catch (...) {
      shared.fail(std::current_exception());
    }
    {
      std::lock_guard lock(shared.mutex);
      shared.produced = true;
    }
    shared.cv.notify_all();
  });
  // One consuming loop per thread (parallel_for nests, so also when called on a pool worker):
  // each waits for the next item until the producer is done and nothing is left.
  try {
    parallel_for(pool.size(), [&](std::size_t) {
      for (;;) {
        std::size_t item;
        {
          std::unique_lock lock(shared.mutex);
          shared.cv.wait(lock, [&] { return shared.stop || shared.produced || !shared.ready.empty(); });
          if (shared.stop || shared.ready.empty()) return;
          item = shared.ready.front();
          shared.ready.pop_front();
        }
        try {
          consume(item);
        } catch (...) {
          shared.fail(std::current_exception());
          return;
        }
      }
    }, pool);
  } catch (...) {
    shared.fail(std::current_exception());
  }
  producer.join();
  if (shared.error) std::rethrow_exception(shared.error);
}

}  // namespace lazycube
