// Engine auto-detection: file suffix, else the first bytes of a local regular file.
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <fstream>
#include <string>

#include "format_sniff.hpp"
#include "lazycube/netcdf/gdal_open.hpp"
#include "lazycube/store/vsi_location.hpp"

namespace lazycube::netcdf {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

const char* const kNetcdfHdf5Suffixes[] = {".nc", ".nc4", ".cdf", ".h5", ".hdf5", ".he5"};
const char* const kGribSuffixes[] = {".grib", ".grib2", ".grb", ".grb2"};

template <std::size_t N>
bool has_suffix(std::string_view url, const char* const (&suffixes)[N]) {
  // Query strings and fragments of URLs are not part of the file name.
  std::string name = lower(url.substr(0, url.find_first_of("?#")));
  if (!name.empty() && name.back() == '/') return false;  // a directory (Zarr store)
  for (const char* suffix : suffixes) {
    const std::size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) return true;
  }
  return false;
}

enum class Signature { None, NetcdfHdf5, Grib };

Signature signature_of(std::string_view url) {
  const std::optional<std::string> local = local_path_of(url);
  if (!local) return Signature::None;
  const std::string& path = *local;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return Signature::None;
  std::array<char, 8> head{};
  std::ifstream in(path, std::ios::binary);
  in.read(head.data(), head.size());
  const auto got = static_cast<std::size_t>(in.gcount());
  const auto starts = [&](const char* sig, std::size_t n) { return got >= n && std::memcmp(head.data(), sig, n) == 0; };
  if (starts("CDF\x01", 4) || starts("CDF\x02", 4) || starts("CDF\x05", 4) || starts("\x89HDF\r\n\x1a\n", 8))
    return Signature::NetcdfHdf5;
  return starts("GRIB", 4) ? Signature::Grib : Signature::None;
}

}  // namespace

bool looks_like_gdal_file(std::string_view url) {
  return has_suffix(url, kNetcdfHdf5Suffixes) || has_suffix(url, kGribSuffixes) ||
         signature_of(url) != Signature::None;
}

bool known_netcdf_or_hdf5(std::string_view url) {
  return has_suffix(url, kNetcdfHdf5Suffixes) || signature_of(url) == Signature::NetcdfHdf5;
}

}  // namespace lazycube::netcdf
