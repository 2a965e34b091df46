// The CLI's argument parsing: --isel DIM=INDEX|START:STOP[:STEP], --option KEY=VALUE (then the
// storage options each backend checks), --virtual/--virtual-option, --input-dims style DIM=N
// lists and --variables name lists, and --codec compressor chains. A bad argument is a
// UsageProblem (the CLI's exit status 2) or a typed lazycube error.
//
// Input: one selector byte, then the argument text (several arguments: one per line).
#include <nlohmann/json.hpp>

#include "../src/cli/commands.hpp"
#include "../src/store/storage_options.hpp"
#include "fuzz_common.hpp"
#include "lazycube/codec/codec.hpp"

using namespace lazycube;

namespace {

// Runs `f`, counting a UsageProblem with a message as the CLI's refusal.
template <class F>
void cli_contract(F&& f) {
  fuzz::typed_or_valid([&] {
    try {
      f();
    } catch (const cli::UsageProblem& e) {
      fuzz::check(e.what()[0] != '\0', "UsageProblem without a message");
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const int mode = in.byte() % 5;
  const std::string_view text = in.rest();
  const std::vector<std::string> args = fuzz::lines(text);
  switch (mode) {
    case 0:
      for (const auto& a : args) cli_contract([&] { (void)cli::parse_isel(a); });
      break;
    case 1:
      cli_contract([&] {
        const StoreOptions options = cli::parse_storage_options(args);
        for (const char* scheme : {"s3", "gs", "az", "http", "reference"})
          fuzz::typed_or_valid([&] { (void)parse_storage_options(options, scheme); });
      });
      break;
    case 2:
      cli_contract([&] {
        cli::OpenArgs open;
        for (const auto& a : args) {
          if (a.starts_with("V")) open.virtual_prefixes.push_back(a.substr(1));
          else if (a.starts_with("O")) open.virtual_options.push_back(a.substr(1));
          else open.options.push_back(a);
        }
        (void)cli::open_options_of(open);
      });
      break;
    case 3:
      cli_contract([&] {
        (void)cli::parse_dim_values(args, "--input-dims", 1);
        (void)cli::parse_name_list(args, "--variables");
      });
      break;
    default:
      for (const int format : {2, 3})
        cli_contract([&] { (void)codec::parse_codec_spec(text, format, DataType::float_(4)); });
  }
  return 0;
}
