#include "lazycube/dataset/dataset.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

#include "char_array.hpp"
#include "cf_coordinates.hpp"
#include "lazycube/dataset/cf_time.hpp"
#include "lazycube/error.hpp"

namespace lazycube {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}


}  // namespace

std::vector<std::string> dims_of(const Array& array) {
  const std::size_t n = array.shape().size();
  std::vector<std::string> names = array.dimension_names();
  if (names.empty()) {
    const auto& attrs = array.attrs();
    if (attrs.is_object()) {
      auto it = attrs.find("_ARRAY_DIMENSIONS");
      if (it != attrs.end() && it->is_array() && it->size() == n) {
        for (const auto& d : *it) names.push_back(d.is_string() ? d.get<std::string>() : "");
      }
    }
  }
  if (names.size() != n) names.assign(n, "");
  for (std::size_t i = 0; i < n; ++i)
    if (names[i].empty()) names[i] = "dim_" + std::to_string(i);
  return names;
}

namespace {

// The fill value that acts as _FillValue (xarray's zarr engine puts a Zarr v2 array's fill value
// in the attributes; v3 arrays and other formats only have an explicit _FillValue attribute).
std::optional<Buffer> acting_fill(const Array& array, int zarr_format) {
  if (zarr_format == 2 && array.has_fill_value() && !array.dtype().is_variable_length() &&
      array.dtype().kind != DTypeKind::Record)
    return array.fill_value_bytes();
  return std::nullopt;
}

}  // namespace

Variable variable_from_array(std::string name, ArrayPtr array, bool decode_cf, int zarr_format,
                             bool mask_valid_range) {
  nlohmann::json attrs = array->attrs().is_object() ? array->attrs() : nlohmann::json::object();
  attrs.erase("_ARRAY_DIMENSIONS");
  std::vector<std::string> dims = dims_of(*array);
  if (!decode_cf) {
    // Undecoded, as xarray's zarr engine: a Zarr v2 fill value shows as the _FillValue attribute.
    if (const auto fill = acting_fill(*array, zarr_format); fill && !attrs.contains("_FillValue"))
      if (auto json = fill_value_json(*fill, array->dtype()); !json.is_null()) attrs["_FillValue"] = json;
    CfDecoding plan = CfDecoding::identity(array->dtype(), std::move(attrs));
    return Variable(std::move(name), std::move(array), std::move(dims), std::move(plan));
  }
  CfInputs inputs;
  inputs.mask_valid_range = mask_valid_range;
  inputs.name = name;
  inputs.array_fill_bytes = acting_fill(*array, zarr_format);
  CfDecoding plan = CfDecoding::plan(array->dtype(), attrs, inputs);
  return Variable(std::move(name), std::move(array), std::move(dims), std::move(plan));
}

namespace {

// Whether the decoded times of `v` at its first and last element fit its datetime64 unit (what
// xarray's _decode_cf_datetime_dtype looks at to choose datetime64[ns] or cftime).
bool ends_fit(const Variable& v) {
  const Shape shape = v.array()->shape();
  if (shape_size(shape) == 0) return true;
  for (bool last : {false, true}) {
    ArraySelection at;
    for (auto n : shape) at.push_back({last ? n - 1 : 0, 1, 1});
    try {
      v.cf().apply(v.array()->read(at));
    } catch (const CodecError&) {
      return false;
    }
  }
  return true;
}

// The datetime64 unit for times datetime64[ns] cannot hold: seconds, or the units' own
// resolution when finer.
std::string coarse_datetime_unit(const nlohmann::json& attrs) {
  auto it = attrs.find("units");
  if (it != attrs.end() && it->is_string())
    if (auto parsed = cf::parse_time_units(it->get<std::string>())) {
      if (parsed->unit_ns < 1'000) return "ns";
      if (parsed->unit_ns < 1'000'000) return "us";
      if (parsed->unit_ns < 1'000'000'000) return "ms";
    }
  return "s";
}

}  // namespace

Dataset decode_dataset(const std::vector<std::pair<std::string, ArrayPtr>>& arrays, nlohmann::json attrs,
                       int zarr_format, const OpenOptions& options) {
  if (!options.decode_cf) {
    std::vector<Variable> variables;
    for (const auto& [name, array] : arrays) variables.push_back(variable_from_array(name, array, false, zarr_format));
    return Dataset(std::move(variables), std::move(attrs));
  }
  check_decode_coords(options.decode_coords);
  // Character arrays (xarray's stackable(): a dim that is no variable, used only as the last
  // dim of byte-string variables).
  std::map<std::string, std::vector<std::string>> dims;
  std::set<std::string> names;
  for (const auto& [name, array] : arrays) {
    dims[name] = dims_of(*array);
    names.insert(name);
  }
  const auto stackable = [&](const std::string& dim) {
    if (names.count(dim) != 0) return false;
    for (const auto& [name, array] : arrays) {
      const auto& d = dims[name];
      for (std::size_t i = 0; i < d.size(); ++i)
        if (d[i] == dim && (array->dtype().kind != DTypeKind::Bytes || i + 1 != d.size())) return false;
    }
    return true;
  };
  std::map<std::string, nlohmann::json> var_attrs;
  for (const auto& [name, array] : arrays) {
    nlohmann::json a = array->attrs().is_object() ? array->attrs() : nlohmann::json::object();
    a.erase("_ARRAY_DIMENSIONS");
    var_attrs[name] = std::move(a);
  }
  inherit_time_bounds_attributes(var_attrs);
  const CfCoordinates coords = decode_cf_coordinates(var_attrs, attrs, options.decode_coords);

  std::vector<Variable> variables;
  for (const auto& [name, stored] : arrays) {
    ArrayPtr array = stored;
    std::vector<std::string> vdims = dims[name];
    CfInputs inputs;
    inputs.mask_valid_range = options.mask_valid_range;
    inputs.scale_dtype_rule = options.scale_dtype_rule;
    inputs.decode_text = options.concat_characters;
    inputs.name = name;
    auto moved = coords.moved.find(name);
    inputs.coordinate_keys = moved == coords.moved.end() ? std::vector<std::string>{} : moved->second;
    if (auto dropped = coords.dropped.find(name); dropped != coords.dropped.end()) inputs.dropped_keys = dropped->second;
    if (options.concat_characters && array->dtype().kind == DTypeKind::Bytes && array->dtype().itemsize == 1 &&
        !vdims.empty() && stackable(vdims.back())) {
      inputs.char_dim_name = vdims.back();
      inputs.char_dim_chunk = array->chunk_shape().back();
      array = std::make_shared<CharArray>(array, vdims);
      vdims.pop_back();
    }
    inputs.array_fill_bytes = acting_fill(*array, zarr_format);
    const nlohmann::json& a = var_attrs[name];
    Variable v(name, array, vdims, CfDecoding::plan(array->dtype(), a, inputs));
    if (v.cf().decodes_datetime() && !ends_fit(v)) {
      inputs.datetime_unit = coarse_datetime_unit(a);
      v = Variable(name, array, vdims, CfDecoding::plan(array->dtype(), a, inputs));
    }
    variables.push_back(std::move(v));
  }
  Dataset ds(std::move(variables), std::move(attrs), coords.global);
  ds.set_cf_warnings(coords.warnings);
  return ds;
}

Dataset::Dataset(std::vector<Variable> variables, nlohmann::json attrs, const std::vector<std::string>& coords) {
  if (attrs.is_object()) attrs_ = std::move(attrs);
  for (auto& v : variables) {
    if (variables_.count(v.name()) != 0)
      throw MetadataError("duplicate variable name '" + v.name() + "'");
    order_.push_back(v.name());
    variables_.emplace(v.name(), std::move(v));
  }
  for (const auto& c : coords)
    if (variables_.count(c) != 0) coord_names_.push_back(c);
  build();
}

Dataset::Dataset(std::vector<Variable> variables, nlohmann::json attrs)
    : Dataset(std::move(variables), std::move(attrs), {}) {}

void Dataset::build() {
  // Dims: ordered union, sizes must agree.
  dims_.clear();
  std::map<std::string, std::string> introduced_by;
  for (const auto& name : order_) {
    const Variable& v = variables_.at(name);
    const Shape shape = v.shape();
    for (std::size_t i = 0; i < v.dims().size(); ++i) {
      const std::string& dim = v.dims()[i];
      auto it = std::find_if(dims_.begin(), dims_.end(), [&](auto& d) { return d.first == dim; });
      if (it == dims_.end()) {
        dims_.emplace_back(dim, shape[i]);
        introduced_by[dim] = name;
      } else if (it->second != shape[i]) {
        throw MetadataError("conflicting sizes for dimension '" + dim + "': " +
                            std::to_string(it->second) + " in variable '" + introduced_by[dim] +
                            "' but " + std::to_string(shape[i]) + " in variable '" + name + "'");
      }
    }
  }
  // Coordinates: kept from before (scalar coords after isel), dimension coordinates, and
  // names listed in `coordinates` attributes.
  std::set<std::string> coords(coord_names_.begin(), coord_names_.end());
  for (const auto& name : order_) {
    const Variable& v = variables_.at(name);
    if (v.ndim() == 1 && v.dims()[0] == name) coords.insert(name);
    // CF coordinate attributes the decoding moved to the encoding (cf_coordinates.hpp); an
    // attribute left visible (decode_coords off, or naming a missing variable) makes none.
    for (const auto& c : cf_coordinate_names(v.encoding()))
      if (variables_.count(c) != 0) coords.insert(c);
  }
  coord_names_.clear();
  for (const auto& name : order_)
    if (coords.count(name) != 0) coord_names_.push_back(name);

  // Index coordinates for Variable::sel.
  auto index = std::make_shared<Variable::IndexCoords>();
  for (const auto& name : order_) {
    const Variable& v = variables_.at(name);
    if (v.ndim() == 1 && v.dims()[0] == name) index->emplace(name, v.with_index_coords(nullptr));
  }
  std::shared_ptr<const Variable::IndexCoords> shared = std::move(index);
  for (auto& [name, v] : variables_) v = v.with_index_coords(shared);
}

std::optional<std::uint64_t> Dataset::dim_size(const std::string& dim) const {
  for (const auto& [d, n] : dims_)
    if (d == dim) return n;
  return std::nullopt;
}

std::vector<std::string> Dataset::variable_names() const { return order_; }
std::vector<std::string> Dataset::coord_names() const { return coord_names_; }

std::vector<std::string> Dataset::data_var_names() const {
  std::vector<std::string> out;
  for (const auto& name : order_)
    if (!is_coord(name)) out.push_back(name);
  return out;
}

bool Dataset::contains(const std::string& name) const { return variables_.count(name) != 0; }

bool Dataset::is_coord(const std::string& name) const {
  return std::find(coord_names_.begin(), coord_names_.end(), name) != coord_names_.end();
}

void Dataset::require_readable(const std::string& advice) const {
  if (unreadable_.empty()) return;
  UnreadableArray first = unreadable_.front();
  if (unreadable_.size() > 1) {
    std::vector<UnreadableArray> rest(unreadable_.begin() + 1, unreadable_.end());
    first.reason += " (also unreadable: " + unreadable_list(rest) + ")";
  }
  rethrow_unreadable(first, advice);
}

const Variable& Dataset::variable(const std::string& name) const {
  auto it = variables_.find(name);
  if (it != variables_.end()) return it->second;
  for (const auto& u : unreadable_)
    if (u.name == name) rethrow_unreadable(u);
  throw NotFound("no variable named '" + name + "' (available: " + join(order_) + ")");
}

Dataset Dataset::subset(const std::vector<std::string>& names) const {
  std::set<std::string> keep, dims;
  for (const auto& name : names) {
    const Variable& v = variable(name);  // NotFound names it
    keep.insert(name);
    dims.insert(v.dims().begin(), v.dims().end());
  }
  for (const auto& c : coord_names_) {
    const auto& cdims = variables_.at(c).dims();
    if (std::all_of(cdims.begin(), cdims.end(), [&](const std::string& d) { return dims.count(d) != 0; }))
      keep.insert(c);
  }
  std::vector<Variable> vars;
  for (const auto& name : order_)
    if (keep.count(name) != 0) vars.push_back(variables_.at(name).with_index_coords(nullptr));
  std::vector<std::string> kept_coords;
  for (const auto& c : coord_names_)
    if (keep.count(c) != 0) kept_coords.push_back(c);
  return Dataset(std::move(vars), attrs_, kept_coords);
}

Dataset Dataset::isel(const Indexers& indexers) const {
  for (const auto& [dim, indexer] : indexers) {
    if (!dim_size(dim)) {
      std::vector<std::string> names;
      for (const auto& d : dims_) names.push_back(d.first);
      throw SelectionError("dimension '" + dim + "' not found in dataset (dims: " + join(names) +
                           ")");
    }
  }
  Dataset out = *this;
  for (auto& [name, v] : out.variables_) {
    Indexers mine;
    for (const auto& [dim, indexer] : indexers)
      if (v.has_dim(dim)) mine.emplace(dim, indexer);
    if (!mine.empty()) v = v.isel(mine);
  }
  out.build();
  return out;
}

Dataset Dataset::sel(const LabelIndexers& labels, const SelOptions& options) const {
  Indexers indexers;
  for (const auto& [dim, label] : labels) {
    if (!dim_size(dim)) {
      std::vector<std::string> names;
      for (const auto& d : dims_) names.push_back(d.first);
      throw SelectionError("dimension '" + dim + "' not found in dataset (dims: " + join(names) +
                           ")");
    }
    auto it = variables_.find(dim);
    if (it == variables_.end() || it->second.ndim() != 1 || it->second.dims()[0] != dim)
      throw SelectionError("cannot select by label on dimension '" + dim +
                           "': it has no index coordinate");
    indexers.emplace(dim, label_to_indexer(it->second, dim, label, options));
  }
  return isel(indexers);
}

}  // namespace lazycube
