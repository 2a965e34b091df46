// Where the CLI reports the library's warnings (GDAL/HDF5/netCDF diagnostics): stdout carries
// only the command's result.
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "util/diagnostics.hpp"

namespace lazycube::cli {

void add_warnings(nlohmann::ordered_json& out) {
  auto warnings = diagnostics::take_warnings();
  if (!warnings.empty()) out["warnings"] = std::move(warnings);
}

void print_warning(const std::string& text) { std::cerr << "lazycube: warning: " << text << "\n"; }

void print_warnings() {
  for (const auto& text : diagnostics::take_warnings()) print_warning(text);
}

}  // namespace lazycube::cli
