// _core.cf_encode: the CF encoding of one variable (src/dataset/cf_encode.cpp), for the writers
// and for the tests that compare it with xarray's encode_cf_variable.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "convert.hpp"
#include "lazycube/dataset/cf_encode.hpp"

namespace lazycube::python {

namespace {

// xarray's ensure_dtype_not_object: missing values (None, NaN) of an object array of strings
// are written as "" (b"" for bytes); there is no missing string in the stored data.
py::object missing_strings_as_empty(const py::handle& values) {
  auto numpy = py::module_::import("numpy");
  py::array a = numpy.attr("asarray")(values);
  if (a.dtype().kind() != 'O') return a;
  py::array out = a.attr("copy")();
  py::list flat = out.attr("ravel")().attr("tolist")();
  bool bytes = false;
  for (auto item : flat) bytes = bytes || py::isinstance<py::bytes>(item);
  bool changed = false;
  for (std::size_t i = 0; i < flat.size(); ++i) {
    py::handle item = flat[i];
    const bool missing = item.is_none() || (py::isinstance<py::float_>(item) && std::isnan(item.cast<double>()));
    if (missing) {
      flat[i] = bytes ? py::object(py::bytes("")) : py::object(py::str(""));
      changed = true;
    }
  }
  if (!changed) return a;
  py::array filled = numpy.attr("empty")(out.attr("shape"), py::str("O"));
  filled.attr("ravel")().attr("__setitem__")(py::slice(0, static_cast<py::ssize_t>(flat.size()), 1), flat);
  return filled;
}

}  // namespace

void bind_cf_encode(py::module_& m) {
  m.def(
      "cf_encode",
      [](const py::handle& values, const py::handle& attrs, const py::handle& encoding, const std::string& name) {
        NDArray array = numpy_to_ndarray(missing_strings_as_empty(values));
        nlohmann::json enc = nlohmann::json::object();
        if (!encoding.is_none()) {
          // The encoding's dtype as a numpy type string ("int16", numpy.int16, ... -> "<i2").
          py::dict copy = py::dict(encoding.cast<py::dict>());
          if (copy.contains("dtype") && !copy["dtype"].is_none())
            copy["dtype"] = py::module_::import("numpy").attr("dtype")(copy["dtype"]).attr("str");
          enc = py_to_json(copy);
        }
        const nlohmann::json attrs_json = attrs.is_none() ? nlohmann::json::object() : py_to_json(attrs);
        std::pair<NDArray, nlohmann::json> result;
        {
          py::gil_scoped_release release;
          result = CfEncoding::encode(array, attrs_json, enc, name);
        }
        return py::make_tuple(ndarray_to_numpy(std::move(result.first)), json_to_py(result.second));
      },
      py::arg("values"), py::arg("attrs") = py::none(), py::arg("encoding") = py::none(), py::arg("name") = "",
      "CF-encodes one variable as xarray's encode_cf_variable does: (stored values, attributes to write).\n"
      "encoding: xarray's keys (dtype, _FillValue, missing_value, scale_factor, add_offset, units, calendar).");
}

}  // namespace lazycube::python
