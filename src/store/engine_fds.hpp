// The file descriptors the HTTP engines own (their connections, epoll and eventfd), so that a
// forked child can close its copies: the child's engine is a new one, and the parent's idle
// keep-alive connections would otherwise stay open in every DataLoader worker for its whole
// life, unusable (the child must never read from or write to them).
#pragma once

#include <curl/curl.h>

namespace lazycube::http {

void own_fd(int fd);
void disown_fd(int fd);
// In a child just after fork(): closes every fd the engines owned in the parent (only the
// child's copies: the parent's connections stay open) and forgets them. Lock-free.
void close_owned_fds_in_child();

// libcurl's socket callbacks (CURLOPT_OPENSOCKETFUNCTION / CURLOPT_CLOSESOCKETFUNCTION): the
// engine's connections, opened close-on-exec and owned as above. Their data (OPENSOCKETDATA /
// CLOSESOCKETDATA), when not null, is the engine's std::size_t count of open connections.
curl_socket_t open_owned_socket(void* clientp, curlsocktype purpose, curl_sockaddr* address);
int close_owned_socket(void* clientp, curl_socket_t fd);

}  // namespace lazycube::http
