// _core.ZarrWriter / _core.ZarrArrayWriter: a thin binding of zarr::Writer
// (include/lazycube/zarr/writer.hpp) for writers that produce their units in Python
// (lazycube.PredictionWriter). Units are encoded and stored with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "convert.hpp"
#include "lazycube/error.hpp"
#include "lazycube/zarr/writer.hpp"

namespace py = pybind11;

namespace lazycube::python {

namespace {

zarr::WriteMode write_mode(const std::string& mode) {
  if (mode == "create") return zarr::WriteMode::Create;
  if (mode == "overwrite") return zarr::WriteMode::Overwrite;
  if (mode == "resume") return zarr::WriteMode::Resume;
  throw UsageError("write mode must be 'create', 'overwrite' or 'resume', not '" + mode + "'");
}

Shape to_shape(const std::vector<std::uint64_t>& v) { return Shape(v.begin(), v.end()); }

}  // namespace

void bind_zarr_writer(py::module_& m) {
  py::class_<zarr::ArrayWriter, std::shared_ptr<zarr::ArrayWriter>>(m, "ZarrArrayWriter")
      .def_property_readonly("path", &zarr::ArrayWriter::path)
      .def_property_readonly("unit_shape", [](const zarr::ArrayWriter& a) { return shape_to_tuple(a.unit_shape()); })
      .def_property_readonly("grid_shape", [](const zarr::ArrayWriter& a) { return shape_to_tuple(a.grid_shape()); })
      .def_property_readonly("num_units", &zarr::ArrayWriter::num_units)
      .def("unit_origin", &zarr::ArrayWriter::unit_origin, py::arg("index"))
      .def("unit_extent", [](const zarr::ArrayWriter& a, const std::vector<std::uint64_t>& index) {
        return shape_to_tuple(a.unit_extent(index));
      }, py::arg("index"))
      .def("unit_key", &zarr::ArrayWriter::unit_key, py::arg("index"))
      .def(
          "write_unit",
          [](zarr::ArrayWriter& a, const std::vector<std::uint64_t>& index, const py::handle& data) {
            NDArray array = numpy_to_ndarray(data);
            if (array.dtype != a.spec().dtype)
              throw UsageError("write_unit: array '" + a.path() + "' stores " + a.spec().dtype.numpy_str() +
                               ", the data is " + array.dtype.numpy_str());
            py::gil_scoped_release release;
            return a.write_unit(index, array);
          },
          py::arg("index"), py::arg("data"),
          "Encodes and stores one unit (chunk, or shard when sharded) from an array of the unit's extent "
          "or whole shape, in the array's dtype. False when it held only the fill value and was skipped.");

  py::class_<zarr::Writer>(m, "ZarrWriter")
      .def(py::init([](const std::string& url, std::map<std::string, std::string> storage_options,
                       const std::string& mode, bool consolidated, bool write_empty_chunks) {
             zarr::WriterOptions o;
             o.mode = write_mode(mode);
             o.consolidated = consolidated;
             o.write_empty_chunks = write_empty_chunks;
             py::gil_scoped_release release;
             return zarr::Writer::open(url, storage_options, o);
           }),
           py::arg("url"), py::arg("storage_options") = std::map<std::string, std::string>{},
           py::arg("mode") = "create", py::arg("consolidated") = true, py::arg("write_empty_chunks") = false,
           "Opens `url` as a Zarr destination: mode 'create' (refuses a destination holding anything), "
           "'overwrite' (removes what is there) or 'resume' (keeps it).")
      .def(
          "create_group",
          [](zarr::Writer& w, const std::string& path, const py::handle& attributes, std::optional<int> zarr_format) {
            w.create_group(path, attributes.is_none() ? nlohmann::json::object() : py_to_json(attributes),
                           zarr_format);
          },
          py::arg("path"), py::arg("attributes") = py::none(), py::arg("zarr_format") = py::none())
      .def(
          "create_array",
          [](zarr::Writer& w, const std::string& path, const py::handle& dtype, const std::vector<std::uint64_t>& shape,
             const std::vector<std::uint64_t>& chunks, const std::vector<std::uint64_t>& shards,
             const std::string& codecs, const py::handle& fill_value, const std::vector<std::string>& dimension_names,
             const py::handle& attributes, int zarr_format) {
            zarr::ArraySpec s;
            s.zarr_format = zarr_format;
            s.dtype = from_numpy_dtype(dtype);
            s.shape = to_shape(shape);
            s.chunk_shape = to_shape(chunks);
            s.shard_shape = to_shape(shards);
            s.codecs = codecs;
            s.fill_value = fill_value.is_none() ? nlohmann::json(nullptr) : py_to_json(fill_value);
            s.dimension_names = dimension_names;
            s.attributes = attributes.is_none() ? nlohmann::json::object() : py_to_json(attributes);
            return w.create_array(path, s);
          },
          py::arg("path"), py::arg("dtype"), py::arg("shape"), py::arg("chunks"),
          py::arg("shards") = std::vector<std::uint64_t>{}, py::arg("codecs") = "zstd:3",
          py::arg("fill_value") = py::none(), py::arg("dimension_names") = std::vector<std::string>{},
          py::arg("attributes") = py::none(), py::arg("zarr_format") = 3,
          "Declares an array (spec checked now, nothing written): fill_value as Zarr metadata writes it "
          "(a number, 'NaN', ...).")
      .def("prepare", &zarr::Writer::prepare, py::call_guard<py::gil_scoped_release>(),
           "Removes now what the first write would remove (overwrite: the old store; create and "
           "resume: nothing, resume cleans a killed run's temporary files at commit).")
      .def("commit", &zarr::Writer::commit, py::call_guard<py::gil_scoped_release>(),
           "Writes the metadata: arrays, groups, then the consolidated metadata.");
}

}  // namespace lazycube::python
