// An exclusive advisory lock on a local file (flock), held for the object's lifetime: processes
// that share a cache folder take turns on one piece of work (the validity index: the first
// process builds it, the others wait and read what it wrote).
#pragma once

#include <string>

namespace lazycube {

class FileLock {
 public:
  // Creates `path` if needed and waits for the lock. Where the file cannot be created or the
  // file system has no locks, held() is false and nothing is locked.
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace lazycube
