// _core.memory_dataset: a Dataset over NumPy arrays, read in place (MemoryArray), so that
// in-memory xarray data goes through lazycube's window engine (stacked batches, shuffles,
// the torch datasets) without copying whole arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <nlohmann/json.hpp>

#include "convert.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/memory_array.hpp"

namespace lazycube::python {

namespace {

// Holds a NumPy array for as long as C++ reads it. The last reference may be dropped on a
// C++ thread (a batch producer), so the release takes the GIL, unless Python is gone already.
std::shared_ptr<const void> hold(const py::array& array) {
  return std::shared_ptr<const void>(new py::object(array), [](const void* p) {
    auto* obj = static_cast<py::object*>(const_cast<void*>(p));
    if (!Py_IsInitialized()) return;  // interpreter finalised: nothing left to release
    py::gil_scoped_acquire gil;
    delete obj;
  });
}

Variable memory_variable(const std::string& name, const std::vector<std::string>& dims, const py::array& array,
                         const py::handle& attrs) {
  const std::string typestr = array.dtype().attr("str").cast<std::string>();
  const ParsedNumpyDType parsed = parse_numpy_dtype(typestr);
  const bool foreign_order =
      parsed.order == (std::endian::native == std::endian::little ? ByteOrder::Big : ByteOrder::Little);
  if (foreign_order || parsed.dtype.is_variable_length() || parsed.dtype.kind == DTypeKind::Unicode ||
      parsed.dtype.kind == DTypeKind::Bytes)
    throw UsageError("in-memory variable '" + name + "' has dtype " + typestr +
                     ": lazycube reads numbers, booleans and datetimes in native byte order in place");
  Shape shape;
  std::vector<std::int64_t> strides;
  for (py::ssize_t d = 0; d < array.ndim(); ++d) {
    shape.push_back(static_cast<std::uint64_t>(array.shape(d)));
    strides.push_back(static_cast<std::int64_t>(array.strides(d)));
  }
  nlohmann::json attrs_json = attrs.is_none() ? nlohmann::json::object() : py_to_json(attrs);
  auto memory = std::make_shared<MemoryArray>(name, parsed.dtype, shape, strides,
                                              static_cast<const std::byte*>(array.data()), hold(array), dims,
                                              attrs_json);
  return Variable(name, memory, dims, CfDecoding::identity(parsed.dtype, attrs_json));
}

}  // namespace

void bind_memory(py::module_& m) {
  m.def(
      "memory_dataset",
      [](const py::list& variables, const py::handle& attrs) {
        std::vector<Variable> vars;
        for (const auto& item : variables) {
          auto entry = item.cast<py::tuple>();
          if (entry.size() != 4) throw UsageError("memory_dataset: each variable is (name, dims, array, attrs)");
          vars.push_back(memory_variable(entry[0].cast<std::string>(), entry[1].cast<std::vector<std::string>>(),
                                         py::array::ensure(entry[2]), entry[3]));
        }
        return Dataset(std::move(vars), attrs.is_none() ? nlohmann::json::object() : py_to_json(attrs));
      },
      py::arg("variables"), py::arg("attrs") = py::none(),
      "A Dataset over NumPy arrays, read in place: [(name, dims, array, attrs)], coordinates first\n"
      "(1-D variables named like their dim are index coordinates).");
}

}  // namespace lazycube::python
