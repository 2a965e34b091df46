// The `lazycube` executable: subcommand parsing and error reporting. Errors print
// "lazycube: <message>" on stderr; exit status 2 for usage mistakes, 1 for data errors.
#include <CLI/CLI.hpp>

#include <iostream>

#include "commands.hpp"
#include "lazycube/error.hpp"

namespace {

int fail(const std::string& message, int status) {
  std::cerr << "lazycube: " << message << "\n";
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lazycube::cli;
  CLI::App app{"lazycube: read Zarr data cubes lazily", "lazycube"};
  app.require_subcommand(1);

  InfoArgs info;
  auto* info_cmd = app.add_subcommand("info", "Show dims, coordinates, variables and attributes");
  info_cmd->add_option("URL", info.url, "Zarr group or array (path or URL)")->required();
  info_cmd->add_flag("--json", info.json, "Print JSON instead of text");
  info_cmd->add_option("--option", info.options, "Storage option KEY=VALUE (repeatable), e.g. max_concurrency=16")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  info_cmd->add_flag("--stats", info.stats, "Print the store's request/retry/latency counters afterwards");

  ReadArgs read;
  std::vector<std::string> isel;
  auto* read_cmd = app.add_subcommand("read", "Write a (selected) variable as a NumPy .npy file");
  read_cmd->add_option("URL", read.url, "Zarr group or array (path or URL)")->required();
  read_cmd->add_option("VARIABLE", read.variable, "Variable name (omit for a single array)");
  read_cmd->add_option("--isel", isel, "DIM=INDEX or DIM=START:STOP[:STEP] (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  read_cmd->add_option("--option", read.options, "Storage option KEY=VALUE (repeatable), e.g. retries=10")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  read_cmd->add_flag("--raw", read.raw, "Skip CF decoding: stored values and dtype");
  read_cmd->add_option("-o,--output", read.output, "Output .npy path")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(e.what(), 2);
  }

  try {
    if (*info_cmd) return run_info(info);
    read.isel = isel;
    return run_read(read);
  } catch (const UsageProblem& e) {
    return fail(e.what(), 2);
  } catch (const lazycube::Error& e) {
    return fail(e.what(), 1);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  } catch (...) {
    return fail("unexpected error", 1);
  }
}
