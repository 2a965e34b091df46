// lazycube::open: the format registry (lazycube/format/registry.hpp) turns the URL or location
// into named arrays and attributes; the Variables (CF decoding) are made here, so the format
// layer never depends on this one.
#include <algorithm>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/format/registry.hpp"
#include "lazycube/record_field_array.hpp"

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

// struct_fields: each array of records replaced by one array per leaf field, in place.
std::vector<std::pair<std::string, ArrayPtr>> split_records(std::vector<std::pair<std::string, ArrayPtr>> arrays) {
  std::vector<std::pair<std::string, ArrayPtr>> out;
  for (auto& named : arrays) {
    if (named.second->dtype().kind != DTypeKind::Record) {
      out.push_back(std::move(named));
      continue;
    }
    for (const std::string& field : record_field_paths(named.second->dtype()))
      out.emplace_back(named.first + "." + field, std::make_shared<RecordFieldArray>(named.second, field));
  }
  return out;
}

Dataset decode(format::Contents contents, const OpenOptions& options) {
  if (options.struct_fields) contents.arrays = split_records(std::move(contents.arrays));
  const auto dropped = [&](const std::string& name) {
    return std::find(options.drop_variables.begin(), options.drop_variables.end(), name) != options.drop_variables.end();
  };
  std::erase_if(contents.arrays, [&](const auto& named) { return dropped(named.first); });
  std::erase_if(contents.unreadable, [&](const UnreadableArray& u) { return dropped(u.name); });
  Dataset ds = decode_dataset(contents.arrays, std::move(contents.attrs), contents.zarr_format, options);
  ds.set_unreadable(std::move(contents.unreadable));
  return ds;
}

}  // namespace

Dataset open(std::string_view url, const OpenOptions& options) {
  return decode(format::open(url, format_request(options)), options);
}

Dataset open(const Location& location, const OpenOptions& options) {
  return decode(format::open(location, format_request(options)), options);
}

}  // namespace lazycube
