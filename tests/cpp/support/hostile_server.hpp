// tests/servers/hostile_server.py serving `root` on 127.0.0.1 for one test (its paths: the
// script's docstring): endless and lying bodies, redirects to other ports, to file://, in a loop.
#pragma once

#include <filesystem>
#include <string>

#include "script_server.hpp"

namespace lazycube::test {

class HostileServer {
 public:
  explicit HostileServer(const std::filesystem::path& root)
      : server_({"/usr/bin/python3", std::string(LAZYCUBE_SOURCE_DIR) + "/tests/servers/hostile_server.py", root.string()},
                "hostile_server.py") {}
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
  int port() const { return server_.port(); }

 private:
  ScriptServer server_;
};

}  // namespace lazycube::test
