// _core.cf_encode: the CF encoding of one variable (src/dataset/cf_encode.cpp), for the writers
// and for the tests that compare it with xarray's encode_cf_variable.
#include <pybind11/pybind11.h>

#include "convert.hpp"
#include "lazycube/dataset/cf_encode.hpp"

namespace lazycube::python {

void bind_cf_encode(py::module_& m) {
  m.def(
      "cf_encode",
      [](const py::handle& values, const py::handle& attrs, const py::handle& encoding, const std::string& name) {
        NDArray array = numpy_to_ndarray(values);
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
