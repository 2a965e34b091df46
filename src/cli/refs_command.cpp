// lazycube refs FILE.nc -o refs.json [--target URL]
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "lazycube/error.hpp"
#include "lazycube/refs/hdf5_refs.hpp"
#include "util/local_file.hpp"

namespace lazycube::cli {

namespace fs = std::filesystem;

int run_refs(const RefsArgs& args) {
  const fs::path file = fs::weakly_canonical(fs::absolute(args.file));
  const fs::path out_dir = fs::weakly_canonical(fs::absolute(args.output)).parent_path();
  std::string target = args.target;
  if (target.empty()) {
    // Relative to the reference file when the data lies under its directory: then the default
    // access policy (targets under the reference file's directory) allows it.
    const fs::path rel = file.lexically_relative(out_dir);
    if (!rel.empty() && *rel.begin() != "..") {
      target = rel.generic_string();
    } else {
      target = file.string();
      std::cerr << "lazycube: note: " << target << " lies outside " << out_dir.string()
                << "; reading these references needs --option allowed_prefixes=" << file.parent_path().string()
                << "\n";
    }
  }
  const auto result = refs::make_hdf5_references(file.string(), target);
  for (const auto& w : result.warnings) print_warning(w);
  write_local_file(args.output, result.json);
  return 0;
}

}  // namespace lazycube::cli
