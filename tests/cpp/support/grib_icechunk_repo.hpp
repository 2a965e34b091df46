// An Icechunk repository whose chunks are virtual references to the messages of a GRIB file, as
// VirtualiZarr writes one for GRIB: array "/<var>" of shape (messages, Nj, Ni), one chunk per
// message (a byte range of the file), codec gribberish; written with the tests' Icechunk writer
// (icechunk_test_writer.hpp). For the GRIB codec's tests, its Python test and its benchmark
// (lazycube_bench_grib repo). Only with LAZYCUBE_HAVE_ECCODES.
#pragma once

#ifdef LAZYCUBE_HAVE_ECCODES

#include <filesystem>
#include <stdexcept>
#include <string>
#include <nlohmann/json.hpp>

#include "grib_test_messages.hpp"
#include "icechunk_test_writer.hpp"

namespace lazycube::test::grib {

// Writes the repository into `dir` for the messages of `file` (all of one grid); `data_type`
// "float64" or "float32". Returns the messages.
inline std::vector<Message> write_icechunk_repository(const std::filesystem::path& dir, const std::filesystem::path& file,
                                                      const std::string& var = "t2m", const std::string& data_type = "float64") {
  namespace w = icechunk_writer;
  const auto messages = messages_of(file);
  if (messages.empty()) throw std::runtime_error("no GRIB message in " + file.string());
  const auto ni = static_cast<std::uint32_t>(messages[0].ni), nj = static_cast<std::uint32_t>(messages[0].nj);
  const auto n = static_cast<std::uint32_t>(messages.size());
  w::ManifestSpec manifest{{{0, n}, {0, 1}, {0, 1}}, {}, ""};
  const std::string url = "file://" + std::filesystem::absolute(file).lexically_normal().string();
  for (std::uint32_t k = 0; k < n; ++k) {
    if (messages[k].ni != messages[0].ni || messages[k].nj != messages[0].nj)
      throw std::runtime_error("message " + std::to_string(k) + " of " + file.string() + " has another grid");
    manifest.refs.push_back({w::Ref::Kind::Virtual, {k, 0, 0}, "", url, messages[k].offset, messages[k].length});
  }
  const std::string array = nlohmann::json{
      {"zarr_format", 3},
      {"node_type", "array"},
      {"shape", {n, nj, ni}},
      {"data_type", data_type},
      {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {1, nj, ni}}}}}},
      {"chunk_key_encoding", {{"name", "default"}}},
      {"fill_value", "NaN"},
      {"codecs", {{{"name", "gribberish"}, {"configuration", {{"var", var}}}}}},
      {"dimension_names", {"time", "latitude", "longitude"}},
      {"attributes", {{"source", "GRIB messages of " + file.filename().string()}}}}.dump();
  w::write_repository(dir, {{"/", R"({"zarr_format": 3, "node_type": "group"})"}, {"/" + var, array, true, {manifest}}});
  return messages;
}

}  // namespace lazycube::test::grib

#endif  // LAZYCUBE_HAVE_ECCODES
