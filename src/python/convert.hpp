// Conversions shared by the binding's translation units: JSON <-> Python, NDArray -> NumPy
// (zero-copy), dtypes, selections.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/dataset/selection.hpp"
#include "lazycube/dtype.hpp"
#include "lazycube/ndarray.hpp"

namespace lazycube::python {

namespace py = pybind11;

py::object json_to_py(const nlohmann::json& j);
nlohmann::json py_to_json(const py::handle& obj);
// The same, keeping the order of dict keys (e.g. BatchOptions::from_json's input_dims).
nlohmann::ordered_json py_to_ordered_json(const py::handle& obj);

// numpy.dtype of a lazycube DataType (DataType::numpy_str()).
py::dtype to_numpy_dtype(const DataType& dtype);
// A lazycube DataType from anything numpy.dtype() accepts (UsageError when it has no match).
DataType from_numpy_dtype(const py::handle& obj);

// Takes ownership of `array`: fixed-size types become a NumPy array over the C++ buffer (its
// base a capsule owning the NDArray); variable-length strings become an object array.
py::array ndarray_to_numpy(NDArray&& array);
// A copy of a NumPy array as an NDArray: C order, native byte order; an object array of str
// (bytes) becomes variable-length strings (bytes). UsageError for other object arrays.
NDArray numpy_to_ndarray(const py::handle& obj);
// A NumPy view of `nbytes` bytes at `data`, kept alive by `owner` (a copy is held by the base).
py::array shared_to_numpy(const DataType& dtype, const Shape& shape,
                          const std::shared_ptr<std::byte>& owner);

py::tuple shape_to_tuple(const Shape& shape);
// A tuple of str (dimension or variable names).
py::tuple str_tuple(const std::vector<std::string>& names);

// An integer (int, numpy integer: operator.index semantics; TypeError for floats) / a float.
std::int64_t as_int64(const py::handle& obj);
double as_double(const py::handle& obj);

Indexers to_indexers(const py::handle& dict);
LabelIndexers to_label_indexers(const py::handle& dict);
SelOptions to_sel_options(const py::object& method, const py::object& tolerance);

}  // namespace lazycube::python
