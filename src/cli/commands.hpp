// The lazycube command-line subcommands. Each returns the process exit status.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "lazycube/dataset/selection.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube::cli {

// A command-line mistake (exit status 2), as opposed to a data error (exit status 1).
class UsageProblem : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct InfoArgs {
  std::string url;
  bool json = false;
  std::vector<std::string> options;  // storage options, KEY=VALUE
  bool stats = false;                // print the store's traffic counters afterwards
};
int run_info(const InfoArgs& args);

struct ReadArgs {
  std::string url;
  std::string variable;             // empty: the only variable
  std::vector<std::string> isel;    // DIM=INDEX or DIM=START:STOP[:STEP]
  bool raw = false;
  std::string output;
  std::vector<std::string> options;  // storage options, KEY=VALUE
};
int run_read(const ReadArgs& args);

// Storage options from "KEY=VALUE" texts; UsageProblem on a text without '=' or a repeated key.
StoreOptions parse_storage_options(const std::vector<std::string>& texts);

// Parses "DIM=5", "DIM=-1", "DIM=2:10", "DIM=:10", "DIM=5:", "DIM=::2", "DIM=10:0:-1".
// UsageProblem on malformed text.
std::pair<std::string, Indexer> parse_isel(const std::string& text);

}  // namespace lazycube::cli
