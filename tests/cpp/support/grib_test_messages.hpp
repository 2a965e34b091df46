// GRIB messages for the GRIB codec's tests and benchmark, made and decoded with ecCodes' own C
// API (the reference): messages from ecCodes' samples with a field set, the messages of a GRIB
// file (offset and length of each), a file converted to GRIB2, and ecCodes' decoding of a
// message with missing points as NaN. Only with LAZYCUBE_HAVE_ECCODES (the build found ecCodes).
#pragma once

#ifdef LAZYCUBE_HAVE_ECCODES

#include <eccodes.h>
#include <cpl_conv.h>
#include <gdal.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace lazycube::test::grib {

struct HandleDelete {
  void operator()(codes_handle* h) const { codes_handle_delete(h); }
};
using Handle = std::unique_ptr<codes_handle, HandleDelete>;

inline void check(int err, const std::string& what) {
  if (err != 0) throw std::runtime_error("ecCodes: " + what + ": " + codes_get_error_message(err));
}

// ecCodes' samples directory (Debian: /usr/share/eccodes/samples).
inline std::filesystem::path samples_dir() { return "/usr/share/eccodes/samples"; }

inline std::vector<std::byte> message_bytes(const codes_handle* h) {
  const void* data = nullptr;
  std::size_t size = 0;
  check(codes_get_message(h, &data, &size), "codes_get_message");
  const auto* p = static_cast<const std::byte*>(data);
  return {p, p + size};
}

// ecCodes' sample `name` (e.g. "GRIB1", "GRIB2", "reduced_gg_pl_32_grib2") with its values set
// to a smooth field (value(i) for point i; NaN marks a missing point, which sets the bitmap),
// encoded by the sample's own packing or by `packing` (an ecCodes packingType).
template <class Value>
std::vector<std::byte> sample_message(const std::string& name, Value value, const std::string& packing = "") {
  Handle h(codes_handle_new_from_samples(nullptr, name.c_str()));
  if (!h) throw std::runtime_error("ecCodes has no sample " + name);
  std::size_t n = 0;
  check(codes_get_size(h.get(), "values", &n), "size of values");
  std::vector<double> v(n);
  bool missing = false;
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = value(i);
    missing = missing || std::isnan(v[i]);
  }
  if (missing) {
    double mv = 0;
    check(codes_get_double(h.get(), "missingValue", &mv), "missingValue");
    for (auto& x : v)
      if (std::isnan(x)) x = mv;
    check(codes_set_long(h.get(), "bitmapPresent", 1), "bitmapPresent");
  }
  check(codes_set_double_array(h.get(), "values", v.data(), n), "set values");
  // Repacked once the field is set (ecCodes refuses some packings of the sample's constant field).
  if (!packing.empty()) check(codes_set_string(h.get(), "packingType", packing.c_str(), nullptr), "packingType " + packing);
  return message_bytes(h.get());
}

// ecCodes' decoding of one message: `key` ("values", "latitudes", "longitudes"), bitmap points
// (values only) as NaN.
inline std::vector<double> decode(const std::vector<std::byte>& message, const char* key = "values") {
  Handle h(codes_handle_new_from_message_copy(nullptr, message.data(), message.size()));
  if (!h) throw std::runtime_error("ecCodes cannot read the message");
  std::size_t n = 0;
  check(codes_get_size(h.get(), key, &n), std::string("size of ") + key);
  std::vector<double> v(n);
  check(codes_get_double_array(h.get(), key, v.data(), &n), key);
  long bitmap = 0;
  if (std::string(key) == "values" && codes_get_long(h.get(), "bitmapPresent", &bitmap) == 0 && bitmap != 0) {
    std::vector<long> bits(n);
    std::size_t m = n;
    check(codes_get_long_array(h.get(), "bitmap", bits.data(), &m), "bitmap");
    for (std::size_t i = 0; i < n; ++i)
      if (bits[i] == 0) v[i] = std::nan("");
  }
  return v;
}

// One message of a file: where it is and its grid.
struct Message {
  std::uint64_t offset = 0, length = 0;
  long edition = 0, ni = 0, nj = 0;
  std::uint64_t points = 0;
};

// Every GRIB message of `path`, in file order.
inline std::vector<Message> messages_of(const std::filesystem::path& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw std::runtime_error("cannot open " + path.string());
  std::vector<Message> out;
  for (;;) {
    int err = 0;
    Handle h(codes_handle_new_from_file(nullptr, f.get(), PRODUCT_GRIB, &err));
    if (!h) break;
    Message m;
    off_t offset = 0;
    check(codes_get_message_offset(h.get(), &offset), "message offset");
    std::size_t length = 0;
    const void* data = nullptr;
    check(codes_get_message(h.get(), &data, &length), "message");
    m.offset = static_cast<std::uint64_t>(offset);
    m.length = length;
    codes_get_long(h.get(), "edition", &m.edition);
    codes_get_long(h.get(), "Ni", &m.ni);
    codes_get_long(h.get(), "Nj", &m.nj);
    std::size_t n = 0;
    check(codes_get_size(h.get(), "values", &n), "size of values");
    m.points = n;
    out.push_back(m);
  }
  return out;
}

inline std::vector<std::byte> read_range(const std::filesystem::path& path, const Message& m) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f || std::fseek(f.get(), static_cast<long>(m.offset), SEEK_SET) != 0)
    throw std::runtime_error("cannot read " + path.string());
  std::vector<std::byte> out(m.length);
  if (std::fread(out.data(), 1, out.size(), f.get()) != out.size()) throw std::runtime_error("short read of " + path.string());
  return out;
}

// `in` with every message re-encoded as GRIB2 (ecCodes' edition conversion), written to `out`.
inline void convert_to_grib2(const std::filesystem::path& in, const std::filesystem::path& out) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(in.c_str(), "rb"), &std::fclose);
  std::unique_ptr<FILE, int (*)(FILE*)> g(std::fopen(out.c_str(), "wb"), &std::fclose);
  if (!f || !g) throw std::runtime_error("cannot convert " + in.string());
  for (;;) {
    int err = 0;
    Handle h(codes_handle_new_from_file(nullptr, f.get(), PRODUCT_GRIB, &err));
    if (!h) break;
    long edition = 0;
    codes_get_long(h.get(), "edition", &edition);
    if (edition != 2) check(codes_set_long(h.get(), "edition", 2), "edition=2");
    const auto bytes = message_bytes(h.get());
    if (std::fwrite(bytes.data(), 1, bytes.size(), g.get()) != bytes.size()) throw std::runtime_error("cannot write " + out.string());
  }
}

// GDAL's GRIB driver's decoding of every message of `path` (band i+1 is message i), float64 rows
// as the driver presents them, with units and longitudes as stored (GRIB_NORMALIZE_UNITS=NO: GDAL
// gives GRIB2 temperatures in Celsius otherwise; GRIB_ADJUST_LONGITUDE_RANGE=NO); nodata as NaN.
inline std::vector<std::vector<double>> gdal_fields(const std::filesystem::path& path) {
  GDALAllRegister();
  CPLSetConfigOption("GRIB_NORMALIZE_UNITS", "NO");
  CPLSetConfigOption("GRIB_ADJUST_LONGITUDE_RANGE", "NO");  // global 0-360 grids as stored
  std::unique_ptr<void, void (*)(void*)> ds(GDALOpen(path.c_str(), GA_ReadOnly), [](void* d) { GDALClose(d); });
  if (!ds) throw std::runtime_error("GDAL cannot open " + path.string());
  std::vector<std::vector<double>> out;
  for (int band = 1; band <= GDALGetRasterCount(ds.get()); ++band) {
    GDALRasterBandH b = GDALGetRasterBand(ds.get(), band);
    const int nx = GDALGetRasterBandXSize(b), ny = GDALGetRasterBandYSize(b);
    std::vector<double> v(static_cast<std::size_t>(nx) * ny);
    if (GDALRasterIO(b, GF_Read, 0, 0, nx, ny, v.data(), nx, ny, GDT_Float64, 0, 0) != CE_None)
      throw std::runtime_error("GDAL cannot read band " + std::to_string(band) + " of " + path.string());
    int has_nodata = 0;
    const double nodata = GDALGetRasterNoDataValue(b, &has_nodata);
    if (has_nodata)
      for (auto& x : v)
        if (x == nodata) x = std::nan("");
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace lazycube::test::grib

#endif  // LAZYCUBE_HAVE_ECCODES
