#include "lazycube/dataset/combine.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "lazycube/concat_array.hpp"
#include "lazycube/error.hpp"
#include "lazycube/memory_array.hpp"
#include "util/text.hpp"

namespace lazycube {

namespace {

std::vector<std::string> part_labels(std::size_t n, const std::vector<std::string>& labels) {
  if (!labels.empty() && labels.size() != n)
    throw UsageError(std::to_string(labels.size()) + " labels for " + std::to_string(n) + " datasets");
  if (!labels.empty()) return labels;
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back("part " + std::to_string(i));
  return out;
}

// Whether two variables hold the same values: dims, decoded dtype, shape and decoded values
// (bytes, so NaN equals NaN as in xarray's equals).
bool same_values(const Variable& a, const Variable& b) {
  if (a.dims() != b.dims() || a.shape() != b.shape() || a.dtype().name() != b.dtype().name()) return false;
  const NDArray x = a.read(), y = b.read();
  if (x.dtype.is_variable_length()) return x.strings == y.strings;
  return x.data.size() == y.data.size() && std::memcmp(x.data.data(), y.data.data(), x.data.size()) == 0;
}

// A variable as a part was opened: a view of its whole array.
void check_whole(const Variable& v, const std::string& label) {
  const ArraySelection sel = v.array_selection();
  const Shape& shape = v.array()->shape();
  for (std::size_t d = 0; d < sel.size(); ++d)
    if (sel[d].start != 0 || sel[d].step != 1 || sel[d].count != shape[d] || v.dims().size() != sel.size())
      throw UsageError("concat takes datasets as opened: variable '" + v.name() + "' of " + label +
                       " has a selection (select after combining)");
}

// The encoding of `v` that decoding depends on (what chunks the store has does not matter). Read
// raw (decode_cf off), the CF attributes say how the values would decode: they must agree too.
nlohmann::json decoding_keys(const Variable& v) {
  nlohmann::json e = v.encoding();
  e.erase("chunks");
  if (v.cf().is_identity() && v.attrs().is_object())
    for (const char* key : {"scale_factor", "add_offset", "_FillValue", "missing_value", "units", "calendar"})
      if (v.attrs().contains(key)) e[key] = v.attrs()[key];
  return e;
}

// The first encoding key where `a` and `b` differ.
std::string differing_key(const nlohmann::json& a, const nlohmann::json& b) {
  for (const auto* j : {&a, &b})
    for (auto it = j->begin(); it != j->end(); ++it)
      if (!a.contains(it.key()) || !b.contains(it.key()) || a[it.key()] != b[it.key()]) return it.key();
  return "";
}

std::string shown(const nlohmann::json& j, const std::string& key) {
  return j.contains(key) ? j[key].dump() : "absent";
}

// The dim's coordinate: each part's decoded values, concatenated in memory.
Variable concat_coordinate(const std::vector<Variable>& vars, const std::vector<std::string>& labels) {
  const Variable& first = vars.front();
  auto values = std::make_shared<NDArray>();
  values->dtype = first.dtype();
  std::uint64_t n = 0;
  std::vector<NDArray> read;
  for (std::size_t p = 0; p < vars.size(); ++p) {
    if (vars[p].dtype().name() != first.dtype().name())
      throw MetadataError("coordinate '" + first.name() + "' decodes to " + vars[p].dtype().name() + " in " +
                          labels[p] + " but to " + first.dtype().name() + " in " + labels.front());
    read.push_back(vars[p].read());
    n += read.back().size();
  }
  values->shape = {n};
  values->data.resize(n * values->dtype.itemsize);
  std::uint64_t at = 0;
  for (const auto& r : read) {
    if (r.data.size() > 0) std::memcpy(values->data.data() + at, r.data.data(), r.data.size());
    at += r.data.size();
  }
  const std::byte* data = values->data.data();
  auto array = std::make_shared<MemoryArray>(
      first.name(), values->dtype, values->shape, std::vector<std::int64_t>{static_cast<std::int64_t>(values->dtype.itemsize)},
      data, values, first.dims(), first.attrs());
  return Variable(first.name(), std::move(array), first.dims(), CfDecoding::identity(values->dtype, first.attrs()));
}

}  // namespace

Dataset concat(const std::vector<Dataset>& parts, const std::string& dim, const std::vector<std::string>& given) {
  if (parts.empty()) throw UsageError("concat needs at least one dataset");
  const std::vector<std::string> labels = part_labels(parts.size(), given);
  const Dataset& first = parts.front();
  const std::vector<std::string> names = first.variable_names();
  for (std::size_t p = 0; p < parts.size(); ++p) {
    if (!parts[p].dim_size(dim))
      throw MetadataError("cannot concatenate along '" + dim + "': " + labels[p] + " has no dimension '" + dim + "'");
    for (const auto& name : parts[p].variable_names())
      if (!first.contains(name))
        throw MetadataError("variable '" + name + "' is in " + labels[p] + " but not in " + labels.front());
    for (const auto& name : names)
      if (!parts[p].contains(name))
        throw MetadataError("variable '" + name + "' is in " + labels.front() + " but not in " + labels[p]);
  }
  std::vector<Variable> out;
  for (const auto& name : names) {
    std::vector<Variable> vars;
    for (const auto& part : parts) vars.push_back(part.variable(name));
    const Variable& v0 = vars.front();
    if (!v0.has_dim(dim)) {
      for (std::size_t p = 1; p < vars.size(); ++p)
        if (!same_values(v0, vars[p]))
          throw MetadataError(std::string(first.is_coord(name) ? "coordinate" : "variable") + " '" + name +
                              "' (without dimension '" + dim + "') differs between " + labels.front() + " and " +
                              labels[p] + ": such variables must be equal in every dataset");
      out.push_back(v0.with_index_coords(nullptr));
      continue;
    }
    for (std::size_t p = 0; p < vars.size(); ++p) {
      check_whole(vars[p], labels[p]);
      if (vars[p].dims() != v0.dims())
        throw MetadataError("variable '" + name + "' has dims (" + join_names(vars[p].dims()) + ") in " + labels[p] +
                            " but (" + join_names(v0.dims()) + ") in " + labels.front());
    }
    // Decoded, each part's coordinate with its own plan; raw, it must share the encoding below.
    if (v0.ndim() == 1 && name == dim && !v0.dtype().is_variable_length() && !v0.cf().is_identity()) {
      out.push_back(concat_coordinate(vars, labels));
      continue;
    }
    const nlohmann::json enc0 = decoding_keys(v0);
    std::vector<ArrayPtr> arrays;
    for (std::size_t p = 0; p < vars.size(); ++p) {
      const nlohmann::json enc = decoding_keys(vars[p]);
      if (enc != enc0) {
        const std::string key = differing_key(enc0, enc);
        throw MetadataError("variable '" + name + "' is encoded differently in " + labels[p] + " (" + key + " " +
                            shown(enc, key) + ") and " + labels.front() + " (" + key + " " + shown(enc0, key) +
                            "): the parts of a concatenated variable must share their CF encoding");
      }
      arrays.push_back(vars[p].array());
    }
    const auto axis = static_cast<std::size_t>(std::find(v0.dims().begin(), v0.dims().end(), dim) - v0.dims().begin());
    out.emplace_back(name, std::make_shared<ConcatArray>(std::move(arrays), axis), v0.dims(), v0.cf());
  }
  return Dataset(std::move(out), first.attrs());
}

Dataset merge(const std::vector<Dataset>& parts, const std::vector<std::string>& given) {
  if (parts.empty()) throw UsageError("merge needs at least one dataset");
  const std::vector<std::string> labels = part_labels(parts.size(), given);
  std::vector<Variable> out;
  std::map<std::string, std::size_t> seen;  // name -> part it was taken from
  std::map<std::string, std::pair<std::uint64_t, std::size_t>> dims;  // dim -> (size, part)
  for (std::size_t p = 0; p < parts.size(); ++p) {
    for (const auto& [dim, size] : parts[p].dims()) {
      auto [it, added] = dims.emplace(dim, std::make_pair(size, p));
      if (!added && it->second.first != size)
        throw MetadataError("dimension '" + dim + "' has size " + std::to_string(size) + " in " + labels[p] +
                            " but " + std::to_string(it->second.first) + " in " + labels[it->second.second]);
    }
    // Index coordinates first, so that datasets on different labels are told as such.
    std::vector<std::string> names;
    for (bool index : {true, false})
      for (const auto& name : parts[p].variable_names()) {
        const Variable& v = parts[p].variable(name);
        if ((v.ndim() == 1 && v.dims()[0] == name) == index) names.push_back(name);
      }
    for (const auto& name : names) {
      const Variable& v = parts[p].variable(name);
      auto it = seen.find(name);
      if (it == seen.end()) {
        seen.emplace(name, p);
      } else if (!same_values(parts[it->second].variable(name), v)) {
        throw MetadataError("variable '" + name + "' conflicts: it differs between " + labels[it->second] + " and " +
                            labels[p]);
      }
    }
    for (const auto& name : parts[p].variable_names())
      if (seen.at(name) == p) out.push_back(parts[p].variable(name).with_index_coords(nullptr));
  }
  return Dataset(std::move(out), parts.front().attrs());
}

}  // namespace lazycube
