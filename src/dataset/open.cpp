// lazycube::open: the format registry (lazycube/format/registry.hpp) turns the URL or location
// into named arrays and attributes; the Variables (CF decoding) are made here, so the format
// layer never depends on this one.
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/format/registry.hpp"

namespace lazycube {

namespace {

format::Request format_request(const OpenOptions& options) {
  format::Request r;
  r.storage_options = options.storage_options;
  r.engine = options.engine;
  r.group = options.group;
  if (!options.format_options.is_null()) r.format_options = options.format_options;
  return r;
}

Dataset decode(format::Contents contents, const OpenOptions& options) {
  return decode_dataset(contents.arrays, std::move(contents.attrs), contents.zarr_format, options);
}

}  // namespace

Dataset open(std::string_view url, const OpenOptions& options) {
  return decode(format::open(url, format_request(options)), options);
}

Dataset open(const Location& location, const OpenOptions& options) {
  return decode(format::open(location, format_request(options)), options);
}

}  // namespace lazycube
