// Engine auto-detection: file suffix, else the first bytes of a local regular file.
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <fstream>
#include <string>

#include "../store/url_scheme.hpp"
#include "gdal_open.hpp"

namespace lazycube::netcdf {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool has_gdal_suffix(std::string_view url) {
  // Query strings and fragments of URLs are not part of the file name.
  std::string name = lower(url.substr(0, url.find_first_of("?#")));
  if (!name.empty() && name.back() == '/') return false;  // a directory (Zarr store)
  static const char* const kSuffixes[] = {".nc", ".nc4", ".cdf", ".h5", ".hdf5", ".he5",
                                          ".grib", ".grib2", ".grb", ".grb2"};
  for (const char* suffix : kSuffixes) {
    const std::size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) return true;
  }
  return false;
}

bool has_gdal_signature(std::string_view url) {
  const ParsedUrl parsed = parse_url_scheme(url);
  if (!parsed.is_local()) return false;
  const std::string& path = parsed.rest;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::array<char, 8> head{};
  std::ifstream in(path, std::ios::binary);
  in.read(head.data(), head.size());
  const auto got = static_cast<std::size_t>(in.gcount());
  const auto starts = [&](const char* sig, std::size_t n) { return got >= n && std::memcmp(head.data(), sig, n) == 0; };
  return starts("CDF\x01", 4) || starts("CDF\x02", 4) || starts("CDF\x05", 4) || starts("\x89HDF\r\n\x1a\n", 8) ||
         starts("GRIB", 4);
}

}  // namespace

bool looks_like_gdal_file(std::string_view url) { return has_gdal_suffix(url) || has_gdal_signature(url); }

}  // namespace lazycube::netcdf
