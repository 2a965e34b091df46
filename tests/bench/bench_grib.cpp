// lazycube_bench_grib: the virtual GRIB codec's benchmark and data (run_grib_bench.py and
// tests/python/test_virtual_grib.py drive it; one JSON line per command).
//   synthetic OUT --ni NI --nj NJ --messages M [--packing grid_simple] [--bits 16]
//                       a GRIB2 file of M messages of a smooth NI x NJ field (ecCodes' GRIB2
//                       sample, its regular lat/lon grid resized), packed as asked
//   grib2 IN OUT        IN with every message re-encoded as GRIB2 (ecCodes' conversion)
//   repo GRIB DIR [--var V] [--dtype float64|float32]
//                       DIR: an Icechunk repository whose chunks are virtual references to
//                       GRIB's messages (tests/cpp/support/grib_icechunk_repo.hpp)
//   decode GRIB [--runs K]
//                       every message of GRIB decoded to float64 by lazycube's GRIB codec and by
//                       GDAL's GRIB driver, in this process, alternating, best of K each: lazycube
//                       reads each message's byte range from the file (as a virtual chunk is read)
//                       and decodes it; GDAL opens the file and reads every band. Prints both
//                       times, the ratio (GDAL time / lazycube time: > 1 is lazycube faster) and
//                       whether both decoded the same values (within GDAL's float32 unpacking).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "../cpp/support/grib_icechunk_repo.hpp"
#include "bench_common.hpp"
#include "lazycube/codec/codec.hpp"

namespace {

namespace fs = std::filesystem;
namespace grib = lazycube::test::grib;
using lazycube::bench::Timings;
using lazycube::bench::arg;

int synthetic(const fs::path& out, long ni, long nj, int count, const std::string& packing, long bits) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(out.c_str(), "wb"), &std::fclose);
  if (!f) throw std::runtime_error("cannot write " + out.string());
  grib::Handle h(codes_handle_new_from_samples(nullptr, "regular_ll_sfc_grib2"));
  if (!h) throw std::runtime_error("ecCodes has no sample regular_ll_sfc_grib2");
  const double di = 360.0 / static_cast<double>(ni), dj = 180.0 / static_cast<double>(nj - 1);
  grib::check(codes_set_long(h.get(), "Ni", ni), "Ni");
  grib::check(codes_set_long(h.get(), "Nj", nj), "Nj");
  grib::check(codes_set_double(h.get(), "latitudeOfFirstGridPointInDegrees", 90), "lat0");
  grib::check(codes_set_double(h.get(), "longitudeOfFirstGridPointInDegrees", 0), "lon0");
  grib::check(codes_set_double(h.get(), "latitudeOfLastGridPointInDegrees", -90), "lat1");
  grib::check(codes_set_double(h.get(), "longitudeOfLastGridPointInDegrees", 360 - di), "lon1");
  grib::check(codes_set_double(h.get(), "iDirectionIncrementInDegrees", di), "di");
  grib::check(codes_set_double(h.get(), "jDirectionIncrementInDegrees", dj), "dj");
  std::vector<double> v(static_cast<std::size_t>(ni * nj));
  for (int m = 0; m < count; ++m) {
    for (long j = 0; j < nj; ++j)
      for (long i = 0; i < ni; ++i)
        v[static_cast<std::size_t>(j * ni + i)] =
            273.15 + 30 * std::cos(static_cast<double>(j) / static_cast<double>(nj) * 3.14159) +
            5 * std::sin(static_cast<double>(i) * 0.05 + m * 0.3) + 0.01 * static_cast<double>((i * 7 + j * 13 + m) % 100);
    grib::check(codes_set_long(h.get(), "step", m), "step");
    grib::check(codes_set_double_array(h.get(), "values", v.data(), v.size()), "values");
    if (m == 0) {  // repacked once a field is set (ecCodes refuses some packings of the sample's constant one)
      grib::check(codes_set_long(h.get(), "bitsPerValue", bits), "bitsPerValue");
      grib::check(codes_set_string(h.get(), "packingType", packing.c_str(), nullptr), "packingType");
    }
    const auto bytes = grib::message_bytes(h.get());
    if (std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size()) throw std::runtime_error("short write");
  }
  std::cout << nlohmann::json{{"file", out.string()}, {"messages", count}, {"ni", ni}, {"nj", nj}, {"packing", packing}}.dump()
            << "\n";
  return 0;
}

int decode(const fs::path& file, int runs) {
  const auto messages = grib::messages_of(file);
  std::uint64_t total_points = 0;
  for (const auto& m : messages) total_points += m.points;
  std::vector<double> ours(total_points), theirs(total_points);
  std::vector<std::shared_ptr<const lazycube::codec::ArrayToBytesCodec>> codecs;
  std::vector<lazycube::codec::ChunkSpec> specs;
  for (const auto& m : messages) {
    specs.push_back({lazycube::DataType::float_(8), {m.points}});
    codecs.push_back(lazycube::codec::make_array_to_bytes_codec("gribberish", nlohmann::json::object(), specs.back()));
  }
  const auto run_lazycube = [&] {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(file.c_str(), "rb"), &std::fclose);
    std::vector<std::byte> buf;
    std::uint64_t at = 0;
    for (std::size_t k = 0; k < messages.size(); ++k) {
      buf.resize(messages[k].length);
      if (std::fseek(f.get(), static_cast<long>(messages[k].offset), SEEK_SET) != 0 ||
          std::fread(buf.data(), 1, buf.size(), f.get()) != buf.size())
        throw std::runtime_error("short read");
      codecs[k]->decode_into({buf.data(), buf.size()}, specs[k],
                             {reinterpret_cast<std::byte*>(ours.data() + at), messages[k].points * sizeof(double)});
      at += messages[k].points;
    }
  };
  const auto run_gdal = [&] {
    std::unique_ptr<void, void (*)(void*)> ds(GDALOpen(file.c_str(), GA_ReadOnly), [](void* d) { GDALClose(d); });
    if (!ds || GDALGetRasterCount(ds.get()) != static_cast<int>(messages.size())) throw std::runtime_error("GDAL cannot open the file");
    std::uint64_t at = 0;
    for (int band = 1; band <= GDALGetRasterCount(ds.get()); ++band) {
      GDALRasterBandH b = GDALGetRasterBand(ds.get(), band);
      const int nx = GDALGetRasterBandXSize(b), ny = GDALGetRasterBandYSize(b);
      if (GDALRasterIO(b, GF_Read, 0, 0, nx, ny, theirs.data() + at, nx, ny, GDT_Float64, 0, 0) != CE_None)
        throw std::runtime_error("GDAL cannot read a band");
      at += static_cast<std::uint64_t>(nx) * ny;
    }
  };
  GDALAllRegister();
  // The values as stored: GRIB2 temperatures stay Kelvin, global 0-360 grids are not rolled to
  // -180..180 (GDAL's defaults convert and roll, which lazycube does not).
  CPLSetConfigOption("GRIB_NORMALIZE_UNITS", "NO");
  CPLSetConfigOption("GRIB_ADJUST_LONGITUDE_RANGE", "NO");
  Timings ours_t, theirs_t;
  for (int r = 0; r < runs; ++r) {  // alternating, each best of `runs`
    const auto a = lazycube::bench::time_runs(1, run_lazycube);
    const auto b = lazycube::bench::time_runs(1, run_gdal);
    ours_t.runs.push_back(a.runs[0]);
    theirs_t.runs.push_back(b.runs[0]);
  }
  double max_diff = 0;
  for (std::uint64_t i = 0; i < total_points; ++i)
    if (!(std::isnan(ours[i]) && std::isnan(theirs[i]))) max_diff = std::max(max_diff, std::fabs(ours[i] - theirs[i]));
  std::cout << nlohmann::json{{"file", file.string()},
                              {"messages", messages.size()},
                              {"points", total_points},
                              {"lazycube_s", ours_t.best()},
                              {"gdal_s", theirs_t.best()},
                              {"ratio", theirs_t.best() / ours_t.best()},
                              {"max_abs_diff", max_diff},
                              {"runs", runs}}
                   .dump()
            << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "synthetic" && argc > 2)
    return synthetic(argv[2], std::stol(arg(argc, argv, "--ni", "1440")), std::stol(arg(argc, argv, "--nj", "721")),
                     std::stoi(arg(argc, argv, "--messages", "8")), arg(argc, argv, "--packing", "grid_simple"),
                     std::stol(arg(argc, argv, "--bits", "16")));
  if (cmd == "grib2" && argc > 3) {
    grib::convert_to_grib2(argv[2], argv[3]);
    std::cout << nlohmann::json{{"file", argv[3]}, {"messages", grib::messages_of(argv[3]).size()}}.dump() << "\n";
    return 0;
  }
  if (cmd == "repo" && argc > 3) {
    const auto messages = grib::write_icechunk_repository(argv[3], argv[2], arg(argc, argv, "--var", "t2m"),
                                                          arg(argc, argv, "--dtype", "float64"));
    std::cout << nlohmann::json{{"repo", argv[3]}, {"grib", argv[2]}, {"messages", messages.size()},
                                {"ni", messages[0].ni}, {"nj", messages[0].nj}}
                     .dump()
              << "\n";
    return 0;
  }
  if (cmd == "decode" && argc > 2) return decode(argv[2], std::stoi(arg(argc, argv, "--runs", "5")));
  std::cerr << "usage: lazycube_bench_grib synthetic OUT [--ni N --nj N --messages M --packing P --bits B] | grib2 IN OUT |\n"
               "       repo GRIB DIR [--var V --dtype float64|float32] | decode GRIB [--runs K]\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "lazycube_bench_grib: " << e.what() << "\n";
  return 1;
}
