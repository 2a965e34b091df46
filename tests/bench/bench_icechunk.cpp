// lazycube_bench_icechunk: the Icechunk benchmark's data and timed modes (run_icechunk_bench.py
// drives it; one JSON line per mode).
//   generate DIR --steps T --side N --chunk-side C
//                                       DIR/icechunk (a spec 2 repository written by the tests'
//                                       writer, one native chunk file per chunk, zstd metadata) and
//                                       DIR/zarr (the same zarr.json and chunk bytes as a plain
//                                       Zarr v3 store): float32 (T, N, N), chunks (1, C, C), raw
//                                       (bytes codec: no decoding hides the per-chunk overhead)
//   generate-big DIR --refs R           a repository whose one manifest holds R references
//                                       (grid sqrt(R) x sqrt(R) of 4-byte chunks in a shared file)
//   read URL [--runs K]                 open URL (an Icechunk repository detected as lazycube::open
//                                       does) and read array "data" whole, best of K
//   open-big DIR                        open the repository, the store and read one chunk: time and RSS
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <nlohmann/json.hpp>

#include "../cpp/support/icechunk_test_writer.hpp"
#include "bench_common.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"

namespace {

namespace fs = std::filesystem;
namespace w = lazycube::test::icechunk_writer;
using lazycube::bench::Timings;
using lazycube::bench::arg;

std::string array_json(std::uint32_t steps, std::uint32_t side, std::uint32_t chunk_side) {
  return nlohmann::json{{"zarr_format", 3},
                        {"node_type", "array"},
                        {"shape", {steps, side, side}},
                        {"data_type", "float32"},
                        {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {1, chunk_side, chunk_side}}}}}},
                        {"chunk_key_encoding", {{"name", "default"}}},
                        {"fill_value", 0.0},
                        {"codecs", {{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}}},
                        {"dimension_names", {"time", "y", "x"}}}
      .dump();
}

const char* kGroup = R"({"zarr_format": 3, "node_type": "group", "attributes": {}})";

int generate(const fs::path& dir, std::uint32_t steps, std::uint32_t side, std::uint32_t chunk_side) {
  fs::remove_all(dir);
  if (chunk_side == 0 || side % chunk_side != 0) throw std::runtime_error("--side must be a multiple of --chunk-side");
  const std::uint32_t per_side = side / chunk_side;
  w::ManifestSpec m{{{0, steps}, {0, per_side}, {0, per_side}}, {}, ""};
  std::vector<float> values(static_cast<std::size_t>(chunk_side) * chunk_side);
  const std::string json = array_json(steps, side, chunk_side);
  lazycube::test::write_file(dir / "zarr" / "zarr.json", kGroup);
  lazycube::test::write_file(dir / "zarr" / "data" / "zarr.json", json);
  for (std::uint32_t t = 0; t < steps; ++t)
    for (std::uint32_t i = 0; i < per_side; ++i)
      for (std::uint32_t j = 0; j < per_side; ++j) {
        for (std::size_t k = 0; k < values.size(); ++k)
          values[k] = static_cast<float>(std::sin(0.001 * static_cast<double>(k) + t + 0.1 * i + 0.01 * j));
        std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * 4);
        lazycube::test::write_file(dir / "zarr" / "data" / "c" / std::to_string(t) / std::to_string(i) / std::to_string(j), bytes);
        m.refs.push_back({w::Ref::Kind::Native, {t, i, j}, std::move(bytes)});
      }
  w::WriteOptions options;
  options.compress = true;
  options.chunk_per_file = true;
  w::write_repository(dir / "icechunk", {{"/", kGroup}, {"/data", json, true, {m}}}, options);
  std::cout << nlohmann::json{{"mode", "generate"}, {"chunks", m.refs.size()}, {"chunk_bytes", values.size() * 4}}.dump() << "\n";
  return 0;
}

int generate_big(const fs::path& dir, std::uint32_t refs) {
  fs::remove_all(dir);
  const auto side = static_cast<std::uint32_t>(std::ceil(std::sqrt(static_cast<double>(refs))));
  w::ManifestSpec m{{{0, 1}, {0, side}, {0, side}}, {}, ""};
  m.refs.reserve(static_cast<std::size_t>(side) * side);
  for (std::uint32_t i = 0; i < side; ++i)
    for (std::uint32_t j = 0; j < side; ++j) {
      const float v = static_cast<float>(i * side + j);
      m.refs.push_back({w::Ref::Kind::Native, {0, i, j}, std::string(reinterpret_cast<const char*>(&v), 4)});
    }
  w::WriteOptions options;
  options.compress = true;
  w::write_repository(dir, {{"/", kGroup}, {"/data", array_json(1, side, 1), true, {m}}}, options);
  std::uintmax_t manifest_bytes = 0;
  for (const auto& e : fs::directory_iterator(dir / "manifests")) manifest_bytes += e.file_size();
  std::cout << nlohmann::json{{"mode", "generate-big"}, {"refs", m.refs.size()}, {"manifest_file_bytes", manifest_bytes}}.dump()
            << "\n";
  return 0;
}

int read(const std::string& url, int runs) {
  // The read benchmark's path (Array::read into one buffer, no decoded-chunk cache): the plain
  // store, or the repository detected as lazycube::open does.
  lazycube::Location location = lazycube::open_location(url);
  if (auto repository = lazycube::icechunk::open_location_if_repository(location)) location = *repository;
  const lazycube::ArrayPtr array = lazycube::zarr::open_array(location.store, "data");
  lazycube::ArraySelection all;
  std::uint64_t bytes = array->dtype().itemsize;
  for (auto n : array->shape()) {
    all.push_back(lazycube::IndexRange::all(n));
    bytes *= n;
  }
  lazycube::Buffer out(bytes);  // allocated once
  const Timings t = lazycube::bench::time_runs(runs, [&] { array->read(all, out.span()); });
  std::cout << lazycube::bench::result_json("read", url, t, bytes, lazycube::bench::checksum(out.view())).dump() << "\n";
  return 0;
}

int open_big(const fs::path& dir) {
  const double rss_before = lazycube::bench::peak_rss_mib();
  const auto start = std::chrono::steady_clock::now();
  auto repo = lazycube::icechunk::Repository::open(lazycube::open_location(dir.string()));
  auto store = lazycube::icechunk::make_icechunk_store(repo);
  const std::chrono::duration<double> opened = std::chrono::steady_clock::now() - start;
  auto chunk = store->get("data/c/0/7/9");  // the first chunk read loads the manifest
  const std::chrono::duration<double> first = std::chrono::steady_clock::now() - start;
  if (!chunk || chunk->size() != 4) throw std::runtime_error("chunk c/0/7/9 not read");
  // 1000 chunks spread over the grid, read twice: the first pass verifies the references its
  // binary searches pass by (once each), the second finds them verified.
  auto read_1000 = [&] {
    const auto t = std::chrono::steady_clock::now();
    for (std::uint32_t i = 0; i < 1000; ++i) store->get("data/c/0/" + std::to_string(i % 997) + "/" + std::to_string(i % 991));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count() / 1000 * 1e6;
  };
  const double cold_us = read_1000(), warm_us = read_1000();
  std::cout << nlohmann::json{{"mode", "open-big"},
                              {"open_s", opened.count()},
                              {"first_chunk_s", first.count()},
                              {"lookup_us", cold_us},
                              {"lookup_warm_us", warm_us},
                              {"rss_before_mb", rss_before},
                              {"peak_rss_mb", lazycube::bench::peak_rss_mib()}}
                   .dump()
            << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "generate" && argc > 2)
      return generate(argv[2], static_cast<std::uint32_t>(std::stoul(arg(argc, argv, "--steps", "64"))),
                      static_cast<std::uint32_t>(std::stoul(arg(argc, argv, "--side", "1024"))),
                      static_cast<std::uint32_t>(std::stoul(arg(argc, argv, "--chunk-side", "128"))));
    if (mode == "generate-big" && argc > 2)
      return generate_big(argv[2], static_cast<std::uint32_t>(std::stoul(arg(argc, argv, "--refs", "1000000"))));
    if (mode == "read" && argc > 2) return read(argv[2], std::stoi(arg(argc, argv, "--runs", "3")));
    if (mode == "open-big" && argc > 2) return open_big(argv[2]);
    std::cerr << "usage: lazycube_bench_icechunk generate DIR [--steps T --side N --chunk-side C] | generate-big DIR [--refs R] |"
                 " read URL [--runs K] | open-big DIR\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "lazycube_bench_icechunk: " << e.what() << "\n";
    return 1;
  }
}
