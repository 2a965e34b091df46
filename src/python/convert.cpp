#include "convert.hpp"

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"

namespace lazycube::python {

py::object json_to_py(const nlohmann::json& j) {
  using T = nlohmann::json::value_t;
  switch (j.type()) {
    case T::null:
    case T::discarded:
      return py::none();
    case T::boolean:
      return py::bool_(j.get<bool>());
    case T::number_integer:
      return py::int_(j.get<std::int64_t>());
    case T::number_unsigned:
      return py::int_(j.get<std::uint64_t>());
    case T::number_float:
      return py::float_(j.get<double>());
    case T::string:
      return py::str(j.get_ref<const std::string&>());
    case T::binary: {
      const auto& b = j.get_binary();
      return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
    }
    case T::array: {
      py::list out;
      for (const auto& v : j) out.append(json_to_py(v));
      return out;
    }
    case T::object: {
      py::dict out;
      for (const auto& [k, v] : j.items()) out[py::str(k)] = json_to_py(v);
      return out;
    }
  }
  return py::none();
}

namespace {

// py_to_json and py_to_ordered_json: one conversion, two object types.
template <class Json>
Json py_to_json_as(const py::handle& obj) {
  if (obj.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(obj)) return obj.cast<bool>();
  if (py::isinstance<py::int_>(obj)) {
    // Values above INT64_MAX (e.g. 64-bit hashes) stay exact as unsigned.
    try {
      return obj.cast<std::int64_t>();
    } catch (const py::cast_error&) {
      return obj.cast<std::uint64_t>();
    }
  }
  if (py::isinstance<py::float_>(obj)) return obj.cast<double>();
  if (py::isinstance<py::str>(obj)) return obj.cast<std::string>();
  if (py::isinstance<py::bytes>(obj)) return obj.cast<std::string>();
  if (py::isinstance<py::dict>(obj)) {
    Json out = Json::object();
    for (auto item : obj.cast<py::dict>()) out[py::str(item.first).cast<std::string>()] = py_to_json_as<Json>(item.second);
    return out;
  }
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    Json out = Json::array();
    for (auto item : obj) out.push_back(py_to_json_as<Json>(item));
    return out;
  }
  // NumPy scalars and arrays: their Python equivalents.
  if (py::hasattr(obj, "tolist")) return py_to_json_as<Json>(obj.attr("tolist")());
  if (py::hasattr(obj, "item")) return py_to_json_as<Json>(obj.attr("item")());
  throw UsageError("cannot convert a Python " +
                   py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>() +
                   " to JSON");
}

}  // namespace

nlohmann::json py_to_json(const py::handle& obj) { return py_to_json_as<nlohmann::json>(obj); }

nlohmann::ordered_json py_to_ordered_json(const py::handle& obj) {
  return py_to_json_as<nlohmann::ordered_json>(obj);
}

py::dtype to_numpy_dtype(const DataType& dtype) {
  if (dtype.kind != DTypeKind::Record) return py::dtype(dtype.numpy_str());
  // A structured dtype: the fields at their offsets, the record's itemsize (nested records too).
  py::list names, formats, offsets;
  for (const RecordField& f : *dtype.fields) {
    names.append(py::str(f.name));
    formats.append(to_numpy_dtype(f.dtype));
    offsets.append(py::int_(f.offset));
  }
  py::dict spec;
  spec["names"] = names;
  spec["formats"] = formats;
  spec["offsets"] = offsets;
  spec["itemsize"] = py::int_(dtype.itemsize);
  return py::dtype::from_args(spec);
}

namespace {

// A NumPy dtype (native byte order) as a DataType; structured dtypes as records.
DataType from_numpy(const py::dtype& dt) {
  if (dt.attr("names").is_none()) return parse_numpy_dtype(dt.attr("str").cast<std::string>()).dtype;
  std::vector<RecordField> fields;
  const py::dict by_name = dt.attr("fields");
  for (auto name : dt.attr("names")) {
    const py::tuple entry = by_name[name];
    fields.push_back({name.cast<std::string>(), entry[1].cast<std::size_t>(), from_numpy(entry[0].cast<py::dtype>())});
  }
  return DataType::record(std::move(fields), dt.attr("itemsize").cast<std::size_t>());
}

}  // namespace

DataType from_numpy_dtype(const py::handle& obj) {
  auto numpy = py::module_::import("numpy");
  return from_numpy(numpy.attr("dtype")(obj).cast<py::dtype>());
}

namespace {

std::vector<py::ssize_t> c_strides(const Shape& shape, std::size_t itemsize) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t s = static_cast<py::ssize_t>(itemsize);
  for (std::size_t k = shape.size(); k-- > 0;) {
    strides[k] = s;
    s *= static_cast<py::ssize_t>(shape[k]);
  }
  return strides;
}

std::vector<py::ssize_t> to_ssize(const Shape& shape) {
  return {shape.begin(), shape.end()};
}

}  // namespace

py::array ndarray_to_numpy(NDArray&& array) {
  if (array.dtype.is_variable_length()) {
    py::array out(py::dtype("O"), to_ssize(array.shape));
    auto* items = static_cast<PyObject**>(out.mutable_data());
    const bool text = array.dtype.kind == DTypeKind::String;
    for (std::size_t i = 0; i < array.strings.size(); ++i) {
      const std::string& s = array.strings[i];
      py::object o = text ? py::object(py::reinterpret_steal<py::object>(
                                PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()),
                                                     "surrogateescape")))
                          : py::object(py::bytes(s));
      if (!o) throw py::error_already_set();
      Py_XDECREF(items[i]);  // numpy fills object arrays with None
      items[i] = o.release().ptr();
    }
    return out;
  }
  const py::dtype dt = to_numpy_dtype(array.dtype);
  const auto shape = to_ssize(array.shape);
  const auto strides = c_strides(array.shape, array.dtype.itemsize);
  if (array.data.data() == nullptr) return py::array(dt, shape, strides);  // empty: numpy owns it
  auto* owned = new NDArray(std::move(array));
  py::capsule base(owned, [](void* p) { delete static_cast<NDArray*>(p); });
  return py::array(dt, shape, strides, owned->data.data(), base);
}

NDArray numpy_to_ndarray(const py::handle& obj) {
  auto numpy = py::module_::import("numpy");
  py::array a = numpy.attr("asarray")(obj);
  NDArray out;
  for (py::ssize_t d = 0; d < a.ndim(); ++d) out.shape.push_back(static_cast<std::uint64_t>(a.shape(d)));
  if (a.dtype().kind() == 'O') {
    // All str (variable-length strings) or all bytes (variable-length bytes).
    bool any_str = false, any_bytes = false;
    for (auto item : a.attr("ravel")(py::str("C"))) {
      const bool is_str = py::isinstance<py::str>(item), is_bytes = py::isinstance<py::bytes>(item);
      if (!is_str && !is_bytes)
        throw UsageError("an object array holds only str or bytes values here, not " +
                         py::str(py::type::handle_of(item).attr("__name__")).cast<std::string>());
      any_str = any_str || is_str;
      any_bytes = any_bytes || is_bytes;
      out.strings.push_back(item.cast<std::string>());
    }
    if (any_str && any_bytes) throw UsageError("an object array mixes str and bytes values");
    out.dtype = any_bytes ? DataType::vlen_bytes() : DataType::string();
    return out;
  }
  // Native byte order, C order (a copy when either differs).
  py::object native = a.dtype().attr("newbyteorder")(py::str("="));
  a = numpy.attr("ascontiguousarray")(a, native);
  out.dtype = from_numpy(a.dtype());
  out.data.resize(static_cast<std::size_t>(a.nbytes()));
  if (a.nbytes() > 0) std::memcpy(out.data.data(), a.data(), static_cast<std::size_t>(a.nbytes()));
  return out;
}

py::array shared_to_numpy(const DataType& dtype, const Shape& shape,
                          const std::shared_ptr<std::byte>& owner) {
  const py::dtype dt = to_numpy_dtype(dtype);
  const auto dims = to_ssize(shape);
  const auto strides = c_strides(shape, dtype.itemsize);
  if (!owner) return py::array(dt, dims, strides);
  auto* held = new std::shared_ptr<std::byte>(owner);
  py::capsule base(held, [](void* p) { delete static_cast<std::shared_ptr<std::byte>*>(p); });
  return py::array(dt, dims, strides, owner.get(), base);
}

py::tuple shape_to_tuple(const Shape& shape) {
  py::tuple out(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) out[i] = py::int_(shape[i]);
  return out;
}

py::tuple str_tuple(const std::vector<std::string>& names) {
  py::tuple out(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) out[i] = py::str(names[i]);
  return out;
}

std::int64_t as_int64(const py::handle& obj) {
  auto idx = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!idx) throw py::error_already_set();
  return idx.cast<std::int64_t>();
}

double as_double(const py::handle& obj) {
  const double v = PyFloat_AsDouble(obj.ptr());
  if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

namespace {

std::optional<std::int64_t> opt_int(const py::object& o) {
  if (o.is_none()) return std::nullopt;
  return as_int64(o);
}

bool is_integer(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return false;
  if (py::isinstance<py::int_>(v)) return true;
  auto numpy = py::module_::import("numpy");
  return py::isinstance(v, numpy.attr("integer"));
}

std::string type_name(const py::handle& v) {
  return py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>();
}

Label to_label(const py::handle& v, const std::string& dim) {
  auto numpy = py::module_::import("numpy");
  if (py::isinstance<py::str>(v)) return Label(v.cast<std::string>());
  if (py::isinstance(v, numpy.attr("datetime64"))) {
    py::object ns = v.attr("astype")("datetime64[ns]");
    return Label(numpy.attr("datetime_as_string")(ns).cast<std::string>());
  }
  if (py::isinstance<py::bool_>(v)) return Label(v.cast<bool>() ? 1.0 : 0.0);
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v) ||
      py::isinstance(v, numpy.attr("number")))
    return Label(as_double(v));
  if (py::hasattr(v, "isoformat")) return Label(v.attr("isoformat")().cast<std::string>());
  if (py::isinstance<py::bytes>(v)) return Label(v.cast<std::string>());
  throw UsageError("sel: label of type " + type_name(v) + " for dim '" + dim +
                   "' is not supported (use a number, a string, a numpy.datetime64 or a slice)");
}

}  // namespace

Indexers to_indexers(const py::handle& obj) {
  Indexers out;
  if (obj.is_none()) return out;
  for (auto item : obj.cast<py::dict>()) {
    const std::string dim = py::str(item.first).cast<std::string>();
    const py::handle v = item.second;
    if (py::isinstance<py::slice>(v)) {
      Slice s;
      s.start = opt_int(v.attr("start"));
      s.stop = opt_int(v.attr("stop"));
      const auto step = opt_int(v.attr("step"));
      s.step = step.value_or(1);
      out[dim] = s;
    } else if (is_integer(v)) {
      out[dim] = as_int64(v);
    } else {
      throw UsageError("isel: indexer for dim '" + dim + "' must be an int or a slice, not " +
                       type_name(v));
    }
  }
  return out;
}

LabelIndexers to_label_indexers(const py::handle& obj) {
  LabelIndexers out;
  if (obj.is_none()) return out;
  for (auto item : obj.cast<py::dict>()) {
    const std::string dim = py::str(item.first).cast<std::string>();
    const py::handle v = item.second;
    if (py::isinstance<py::slice>(v)) {
      if (!v.attr("step").is_none())
        throw UsageError("sel: a label slice for dim '" + dim + "' cannot have a step");
      std::optional<Label> start, stop;
      if (!v.attr("start").is_none()) start = to_label(v.attr("start"), dim);
      if (!v.attr("stop").is_none()) stop = to_label(v.attr("stop"), dim);
      out.insert_or_assign(dim, LabelSlice(start, stop));
    } else {
      out.insert_or_assign(dim, to_label(v, dim));
    }
  }
  return out;
}

SelOptions to_sel_options(const py::object& method, const py::object& tolerance) {
  SelOptions o;
  if (!method.is_none()) {
    const std::string m = method.cast<std::string>();
    if (m == "nearest")
      o.method = SelMethod::Nearest;
    else if (m != "exact")
      throw UsageError("sel: method must be None or 'nearest', not '" + m + "'");
  }
  if (!tolerance.is_none()) {
    auto numpy = py::module_::import("numpy");
    if (py::isinstance(tolerance, numpy.attr("timedelta64")))
      o.tolerance = tolerance.attr("astype")("timedelta64[ns]").attr("astype")("int64").cast<double>() / 1e9;
    else if (py::hasattr(tolerance, "total_seconds"))
      o.tolerance = tolerance.attr("total_seconds")().cast<double>();
    else
      o.tolerance = as_double(tolerance);
  }
  return o;
}

}  // namespace lazycube::python
