// _core.WindowGrid: the window grid of the batch layer (include/lazycube/batch/window_grid.hpp)
// for Python code that maps windows back to positions (lazycube.PredictionWriter): the same
// starts, strides and row-major numbering the BatchGenerator uses.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "convert.hpp"
#include "lazycube/batch/window_grid.hpp"
#include "lazycube/error.hpp"

namespace py = pybind11;

namespace lazycube::python {

void bind_window_grid(py::module_& m) {
  using batch::WindowGrid;
  py::class_<WindowGrid>(m, "WindowGrid")
      .def(py::init([](const batch::DimSizes& extents, const batch::DimSizes& lengths,
                       const std::map<std::string, std::int64_t>& overlaps) {
             return WindowGrid(extents, lengths, overlaps);
           }),
           py::arg("extents"), py::arg("lengths"), py::arg("overlaps") = std::map<std::string, std::int64_t>{},
           "Windows of `lengths` [(dim, length), ...] sliding over `extents` [(dim, size), ...] with "
           "`overlaps` {dim: overlap}, numbered row-major (last dim fastest).")
      .def_property_readonly("size", &WindowGrid::size)
      .def_property_readonly("dims",
                             [](const WindowGrid& g) {
                               py::list out;
                               for (const auto& d : g.dims()) {
                                 py::dict e;
                                 e["dim"] = d.dim;
                                 e["size"] = d.size;
                                 e["length"] = d.length;
                                 e["stride"] = d.stride;
                                 e["count"] = d.count;
                                 out.append(std::move(e));
                               }
                               return out;
                             })
      .def(
          "unravel",
          [](const WindowGrid& g, const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& ids) {
            // (n,) window numbers -> (n, ndim) per-dim window numbers
            const auto n = static_cast<std::size_t>(ids.size());
            py::array_t<std::int64_t> out({n, g.ndim()});
            const std::int64_t* in = ids.data();
            std::int64_t* o = out.mutable_data();
            std::vector<std::uint64_t> per_dim(g.ndim());
            for (std::size_t k = 0; k < n; ++k) {
              if (in[k] < 0 || static_cast<std::uint64_t>(in[k]) >= g.size())
                throw UsageError("window " + std::to_string(in[k]) + " is not in the grid (" +
                                 std::to_string(g.size()) + " windows)");
              g.unravel_into(static_cast<std::uint64_t>(in[k]), per_dim);
              for (std::size_t d = 0; d < g.ndim(); ++d) o[k * g.ndim() + d] = static_cast<std::int64_t>(per_dim[d]);
            }
            return out;
          },
          py::arg("ids"))
      .def(
          "ravel",
          [](const WindowGrid& g, const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& per_dim) {
            // (n, ndim) per-dim window numbers -> (n,) window numbers
            if (per_dim.ndim() != 2 || static_cast<std::size_t>(per_dim.shape(1)) != g.ndim())
              throw UsageError("ravel takes an (n, " + std::to_string(g.ndim()) + ") array of per-dim window numbers");
            const auto n = static_cast<std::size_t>(per_dim.shape(0));
            py::array_t<std::int64_t> out(n);
            const std::int64_t* in = per_dim.data();
            std::int64_t* o = out.mutable_data();
            std::vector<std::uint64_t> w(g.ndim());
            for (std::size_t k = 0; k < n; ++k) {
              for (std::size_t d = 0; d < g.ndim(); ++d) {
                const std::int64_t v = in[k * g.ndim() + d];
                if (v < 0 || static_cast<std::uint64_t>(v) >= g.dims()[d].count)
                  throw UsageError("window number " + std::to_string(v) + " along '" + g.dims()[d].dim +
                                   "' is not in the grid (" + std::to_string(g.dims()[d].count) + " windows)");
                w[d] = static_cast<std::uint64_t>(v);
              }
              o[k] = static_cast<std::int64_t>(g.ravel(w));
            }
            return out;
          },
          py::arg("per_dim"));
}

}  // namespace lazycube::python
