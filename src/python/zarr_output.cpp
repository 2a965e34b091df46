// _core.ZarrOutput: a Dataset written as a Zarr store (lazycube.convert / lazycube.to_zarr; see
// include/lazycube/dataset/zarr_output.hpp). The GIL is released while regions are written.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "lazycube/dataset/zarr_output.hpp"

namespace py = pybind11;

namespace lazycube::python {

namespace {

// A Python progress callable called from the writing threads (one call at a time).
OutputProgress progress_of(const py::object& callback) {
  if (callback.is_none()) return {};
  auto holder = std::make_shared<py::object>(callback);
  return [holder](std::uint64_t done, std::uint64_t total) {
    py::gil_scoped_acquire gil;
    (*holder)(done, total);
  };
}

}  // namespace

void bind_zarr_output(py::module_& m) {
  m.def("default_zarr_codec", &default_zarr_codec, py::arg("zarr_format"),
        "The compressor a Zarr output gets when none is named (zstd:3 for v3, blosc:lz4:5:shuffle for v2).");
  py::class_<ZarrOutput>(m, "ZarrOutput")
      .def(py::init([](Dataset ds, const std::string& url, int zarr_format,
                       std::map<std::string, std::uint64_t> chunks, std::map<std::string, std::uint64_t> shards,
                       std::string codec, std::map<std::string, std::string> storage_options, bool overwrite,
                       bool resume, std::size_t threads, std::map<std::string, std::vector<std::uint64_t>> chunk_edges,
                       std::map<std::string, std::vector<std::uint64_t>> shard_edges) {
             ZarrOutputOptions o;
             o.zarr_format = zarr_format;
             o.chunks = std::move(chunks);
             o.shards = std::move(shards);
             o.chunk_edges = std::move(chunk_edges);
             o.shard_edges = std::move(shard_edges);
             o.codec = std::move(codec);
             o.storage_options = std::move(storage_options);
             o.overwrite = overwrite;
             o.resume = resume;
             o.threads = threads;
             py::gil_scoped_release release;
             return ZarrOutput(std::move(ds), url, std::move(o));
           }),
           py::arg("dataset"), py::arg("url"), py::arg("zarr_format") = 3,
           py::arg("chunks") = std::map<std::string, std::uint64_t>{},
           py::arg("shards") = std::map<std::string, std::uint64_t>{}, py::arg("codec") = "",
           py::arg("storage_options") = std::map<std::string, std::string>{}, py::arg("overwrite") = false,
           py::arg("resume") = false, py::arg("threads") = 0,
           py::arg("chunk_edges") = std::map<std::string, std::vector<std::uint64_t>>{},
           py::arg("shard_edges") = std::map<std::string, std::vector<std::uint64_t>>{})
      .def("region_count", &ZarrOutput::region_count)
      .def("region_bytes", &ZarrOutput::region_bytes, py::arg("region"))
      .def("describe_region", &ZarrOutput::describe_region, py::arg("region"))
      .def("prepare", &ZarrOutput::prepare, py::call_guard<py::gil_scoped_release>())
      .def(
          "write_regions",
          [](ZarrOutput& o, const std::vector<std::uint64_t>& regions, const py::object& progress) {
            OutputProgress p = progress_of(progress);
            py::gil_scoped_release release;
            return o.write_regions(regions, p);
          },
          py::arg("regions"), py::arg("progress") = py::none())
      .def("commit", &ZarrOutput::commit, py::call_guard<py::gil_scoped_release>())
      .def(
          "run",
          [](ZarrOutput& o, const py::object& progress) {
            OutputProgress p = progress_of(progress);
            py::gil_scoped_release release;
            o.run(p);
          },
          py::arg("progress") = py::none());
}

}  // namespace lazycube::python
