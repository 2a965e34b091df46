// _core.compute_stats / _core.stats_dataset / the stats JSON: lazycube.stats (python/lazycube/
// statistics.py) over include/lazycube/dataset/stats.hpp. The GIL is released while reading.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <nlohmann/json.hpp>

#include "lazycube/dataset/stats.hpp"
#include "lazycube/error.hpp"

namespace py = pybind11;

namespace lazycube::python {

void bind_stats(py::module_& m) {
  m.def(
      "compute_stats",
      [](const Dataset& ds, std::optional<std::vector<std::string>> variables,
         std::optional<std::vector<std::string>> keep, std::optional<std::vector<std::string>> dims) {
        if (keep && dims) throw UsageError("stats: give dims (the dims reduced) or keep (the dims kept), not both");
        StatsOptions o;
        if (variables) o.variables = *variables;
        py::gil_scoped_release release;
        if (keep) o.keep = *keep;
        if (dims) o.keep = kept_dims(ds, *dims);
        return stats_to_json(compute_stats(ds, o)).dump();
      },
      py::arg("dataset"), py::arg("variables") = py::none(), py::arg("keep") = py::none(),
      py::arg("dims") = py::none(),
      "The stats JSON document (text) of the dataset's variables, reduced over `dims` (default all) or "
      "all but `keep`.");
  m.def(
      "check_stats_json", [](const std::string& text) { stats_from_json(nlohmann::json::parse(text)); },
      py::arg("text"), "UsageError when `text` is not a valid stats document.");
  m.def(
      "stats_dataset", [](const std::string& text) { return stats_dataset(stats_from_json(nlohmann::json::parse(text))); },
      py::arg("text"), "The statistics of a stats document as an in-memory Dataset (V_mean, V_std, ...).");
}

}  // namespace lazycube::python
