#include "stdout_capture.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace lazycube::netcdf {

namespace {

std::mutex capture_mutex;

// An unnamed temporary file (O_TMPFILE), or a named one unlinked at once.
int temporary_file() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/tmp";
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string name = dir + "/lazycube-stdout.XXXXXX";
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) ::unlink(name.c_str());
  return fd;
}

}  // namespace

StdoutCapture::StdoutCapture() : lock_(capture_mutex) {
  std::fflush(stdout);  // what was printed before belongs to the real stdout
  file_fd_ = temporary_file();
  if (file_fd_ < 0) return;
  saved_fd_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
  if (saved_fd_ < 0 || ::dup2(file_fd_, STDOUT_FILENO) < 0) {
    if (saved_fd_ >= 0) ::close(saved_fd_);
    saved_fd_ = -1;
    ::close(file_fd_);
    file_fd_ = -1;
  }
}

StdoutCapture::~StdoutCapture() {
  restore();
  if (file_fd_ >= 0) ::close(file_fd_);
}

void StdoutCapture::restore() {
  if (saved_fd_ < 0) return;
  std::fflush(stdout);  // printf's buffered text goes to the capture, not to the real stdout
  ::dup2(saved_fd_, STDOUT_FILENO);
  ::close(saved_fd_);
  saved_fd_ = -1;
}

std::string StdoutCapture::take() {
  restore();
  std::string text;
  if (file_fd_ < 0) return text;
  char buffer[4096];
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(file_fd_, buffer, sizeof buffer, offset);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
  ::close(file_fd_);
  file_fd_ = -1;
  return text;
}

}  // namespace lazycube::netcdf
