#include "load_threads.hpp"

namespace lazycube::batch {

LoadThreads::~LoadThreads() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::size_t LoadThreads::threads() const {
  std::lock_guard lock(mutex_);
  return threads_.size();
}

std::size_t LoadThreads::idle() const {
  std::lock_guard lock(mutex_);
  return idle_;
}

void LoadThreads::run(std::function<void()> task) {
  {
    std::unique_lock lock(mutex_);
    if (idle_ > 0) {  // an idle thread takes it (or one ending its task): never one still busy
      --idle_;
      tasks_.push_back(std::move(task));
      lock.unlock();
      cv_.notify_one();
      return;
    }
    tasks_.push_back(std::move(task));
    try {
      threads_.emplace_back([this] { serve(); });
      return;
    } catch (...) {  // no thread: run it here (nothing else took it: the lock was held)
      task = std::move(tasks_.back());
      tasks_.pop_back();
    }
  }
  task();
}

void LoadThreads::serve() {
  // idle_ stays (threads not running a task) - (tasks queued) whoever takes a task: a new
  // thread comes with the task it was started for, a thread that ends one counts itself idle.
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    task = nullptr;
    lock.lock();
    ++idle_;
  }
}

}  // namespace lazycube::batch
