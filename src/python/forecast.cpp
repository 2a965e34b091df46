// lazycube._core.ForecastSampler / EpochBatches / derived_forcing over lazycube::batch's
// forecast samples (include/lazycube/batch/forecast.hpp); lazycube/forecast.py builds on them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert.hpp"
#include "lazycube/batch/forecast.hpp"
#include "lazycube/error.hpp"

namespace lazycube::python {

using batch::ForecastBatch;
using batch::ForecastSampler;
using batch::EpochBatches;
using batch::ForecastEpoch;
using batch::ForecastSpec;

namespace {

py::object optional_array(const std::optional<batch::BatchArray>& a) {
  if (!a) return py::none();
  return shared_to_numpy(a->dtype, a->shape, a->data);
}

py::array times_numpy(const std::vector<std::int64_t>& ns) {
  py::array out(py::dtype("datetime64[ns]"), std::vector<py::ssize_t>{static_cast<py::ssize_t>(ns.size())});
  if (!ns.empty()) std::memcpy(out.mutable_data(), ns.data(), ns.size() * sizeof(std::int64_t));
  return out;
}

py::dict batch_to_py(ForecastBatch&& b) {
  py::dict out;
  out["samples"] = py::array_t<std::uint64_t>(static_cast<py::ssize_t>(b.samples.size()), b.samples.data());
  out["anchors"] = times_numpy(b.anchors);
  out["rollout"] = b.rollout;
  out["epoch"] = b.epoch;
  out["index"] = b.index;
  py::list streams;
  for (auto& s : b.streams) {
    py::dict d;
    d["stream"] = s.stream;
    d["inputs"] = shared_to_numpy(s.inputs.dtype, s.inputs.shape, s.inputs.data);
    d["targets"] = shared_to_numpy(s.targets.dtype, s.targets.shape, s.targets.data);
    d["forcings"] = optional_array(s.forcings);
    d["inputs_mask"] = optional_array(s.inputs_mask);
    d["targets_mask"] = optional_array(s.targets_mask);
    d["forcings_mask"] = optional_array(s.forcings_mask);
    d["input_channels"] = str_tuple(s.input_channels);
    d["target_channels"] = str_tuple(s.target_channels);
    d["forcing_channels"] = str_tuple(s.forcing_channels);
    d["grid_dims"] = str_tuple(s.grid_dims);
    py::list patches;
    for (const auto& p : s.patches) {
      py::list ranges;
      for (const auto& r : p) ranges.append(py::make_tuple(r.start, r.start + r.count));
      patches.append(ranges);
    }
    d["patches"] = patches;
    streams.append(d);
  }
  out["streams"] = streams;
  return out;
}

std::vector<std::uint64_t> ids_of(const py::handle& ids) {
  std::vector<std::uint64_t> out;
  for (auto i : ids) {
    const auto v = as_int64(i);
    if (v < 0) throw SelectionError("sample numbers must not be negative, got " + std::to_string(v));
    out.push_back(static_cast<std::uint64_t>(v));
  }
  return out;
}

}  // namespace

void bind_forecast(py::module_& m) {
  py::class_<ForecastSampler, std::shared_ptr<ForecastSampler>>(m, "ForecastSampler")
      .def(py::init([](std::vector<std::pair<std::string, Dataset>> streams, const py::dict& spec,
                       std::optional<std::uint64_t> cache_bytes, std::optional<std::string> index_dir,
                       py::object progress, std::optional<std::string> validity_index) {
             std::vector<std::string> names;
             for (const auto& [n, ds] : streams) names.push_back(n);
             ForecastSpec s = ForecastSpec::from_json(py_to_ordered_json(spec), names);
             batch::ForecastRuntime rt;
             if (cache_bytes) rt.cache = std::make_shared<ChunkCache>(*cache_bytes);
             if (index_dir) rt.index_dir = *index_dir;
             if (validity_index) rt.validity_index = *validity_index;
             if (!progress.is_none())
               rt.progress = [progress](const std::string& what, std::uint64_t done, std::uint64_t total) {
                 py::gil_scoped_acquire gil;
                 progress(what, done, total);
               };
             py::gil_scoped_release release;
             return std::make_shared<ForecastSampler>(std::move(streams), std::move(s), std::move(rt));
           }),
           py::arg("streams"), py::arg("spec"), py::arg("cache_bytes") = py::none(), py::arg("index_dir") = py::none(),
           py::arg("progress") = py::none(), py::arg("validity_index") = py::none())
      .def("__len__", &ForecastSampler::size)
      .def_property_readonly("patches", &ForecastSampler::patches)
      .def_property_readonly("anchor_times", [](const ForecastSampler& s) { return times_numpy(s.anchor_times()); })
      .def_property_readonly("excluded",
                             [](const ForecastSampler& s) {
                               py::dict d;
                               d["out_of_range"] = s.excluded().out_of_range;
                               d["time_absent"] = s.excluded().time_absent;
                               d["missing_values"] = s.excluded().missing_values;
                               return d;
                             })
      .def_property_readonly("spec", [](const ForecastSampler& s) { return json_to_py(nlohmann::json::parse(s.spec().to_json().dump())); })
      .def_property_readonly("index_loaded", &ForecastSampler::index_loaded)
      .def_property_readonly("validity_index", &ForecastSampler::validity_index)
      .def_property_readonly("stream_names", &ForecastSampler::stream_names)
      .def(
          "channels",
          [](const ForecastSampler& s, std::size_t stream, const std::string& role) {
            const batch::ForecastRole r = role == "inputs"    ? batch::ForecastRole::Inputs
                                          : role == "targets" ? batch::ForecastRole::Targets
                                          : role == "forcings"
                                              ? batch::ForecastRole::Forcings
                                              : throw UsageError("role must be inputs, targets or forcings, not " + role);
            py::list out;
            for (const auto& c : s.channels(stream, r)) {
              py::dict at;
              for (const auto& [d, i] : c.at) at[py::str(d)] = i;
              out.append(py::make_tuple(c.name, c.variable, at, c.derived));
            }
            return out;
          },
          py::arg("stream"), py::arg("role"))
      .def("cache_stats",
           [](const ForecastSampler& s) {
             const CacheStats st = s.cache()->stats();
             py::dict d;
             d["bytes_fetched"] = st.bytes_fetched;
             d["misses"] = st.misses;
             d["hits"] = st.hits;
             d["bytes_unique"] = st.bytes_unique;
             d["budget_bytes"] = st.budget_bytes;
             d["fetched_ahead"] = st.fetched_ahead;
             d["fetched_ahead_unused"] = st.fetched_ahead_unused;
             return d;
           })
      .def(
          "batch",
          [](const ForecastSampler& s, const py::object& ids, std::uint64_t rollout) {
            const auto v = ids_of(ids);
            ForecastBatch b;
            {
              py::gil_scoped_release release;
              b = s.batch(v, rollout);
            }
            return batch_to_py(std::move(b));
          },
          py::arg("ids"), py::arg("rollout") = 0)
      .def(
          "schedule",
          [](const ForecastSampler& s, std::uint64_t batch_size, const py::object& shuffle, std::uint64_t seed,
             std::uint64_t epoch, std::uint32_t rank, std::uint32_t world_size, std::uint32_t worker,
             std::uint32_t num_workers, const py::object& remaining, bool drop_last,
             std::optional<std::uint32_t> planned_world_size, std::optional<std::uint32_t> planned_num_workers,
             std::uint64_t block_samples, std::uint64_t active_blocks) {
            batch::ShardSpec shard{rank, world_size, worker, num_workers};
            // the shuffle argument as the generator's document reads it (None, a bool or a name)
            const batch::Shuffle sh =
                batch::BatchOptions::from_json(nlohmann::ordered_json{{"shuffle", py_to_ordered_json(shuffle)}}).shuffle;
            std::shared_ptr<const std::vector<batch::PositionRange>> left;
            if (!remaining.is_none()) {
              auto ranges = std::make_shared<std::vector<batch::PositionRange>>();
              for (const auto& r : remaining) {
                const auto pair = r.cast<std::pair<std::uint64_t, std::uint64_t>>();
                ranges->push_back({pair.first, pair.second});
              }
              left = std::move(ranges);
            }
            std::optional<batch::ShardSpec> planned;
            if (planned_world_size || planned_num_workers)
              planned = batch::ShardSpec{0, planned_world_size.value_or(world_size), 0,
                                         planned_num_workers.value_or(num_workers)};
            return EpochBatches(s.size(), sh, seed, epoch, shard, batch_size, drop_last,
                                s.planning(batch::BlockPlan{block_samples, active_blocks}), std::move(left), planned);
          },
          py::arg("batch_size"), py::arg("shuffle") = py::none(), py::arg("seed") = 0, py::arg("epoch") = 0,
          py::arg("rank") = 0, py::arg("world_size") = 1, py::arg("worker") = 0, py::arg("num_workers") = 1,
          py::arg("remaining") = py::none(), py::arg("drop_last") = false, py::arg("planned_world_size") = py::none(),
          py::arg("planned_num_workers") = py::none(), py::arg("block_samples") = 0, py::arg("active_blocks") = 0);

  // One worker's epoch of batches with fetch-ahead over the planner's order (batch::ForecastEpoch).
  py::class_<ForecastEpoch>(m, "ForecastEpoch")
      .def(py::init([](const ForecastSampler& sampler, const EpochBatches& batches, std::uint64_t rollout,
                       std::uint64_t prefetch, std::optional<std::uint64_t> fetch_ahead_bytes) {
             batch::ForecastEpochOptions o;
             o.rollout = rollout;
             o.prefetch = prefetch;
             o.fetch_ahead_bytes = fetch_ahead_bytes;
             py::gil_scoped_release release;
             return std::make_unique<ForecastEpoch>(sampler, batches, o);
           }),
           py::arg("sampler"), py::arg("batches"), py::arg("rollout") = 0, py::arg("prefetch") = 2,
           py::arg("fetch_ahead_bytes") = py::none(), py::keep_alive<1, 2>())
      .def("__len__", &ForecastEpoch::size)
      .def_property_readonly("position", &ForecastEpoch::position)
      .def_property_readonly("fetch_ahead_bytes", &ForecastEpoch::fetch_ahead_bytes)
      .def("__iter__", [](ForecastEpoch& e) -> ForecastEpoch& { return e; })
      .def("__next__", [](ForecastEpoch& e) {
        std::optional<ForecastBatch> b;
        {
          py::gil_scoped_release release;
          b = e.next();
        }
        if (!b) throw py::stop_iteration();
        return batch_to_py(std::move(*b));
      });

  // The epoch planner's batches of one rank and worker (batch::EpochBatches).
  py::class_<EpochBatches>(m, "EpochBatches")
      .def_property_readonly("rank_batches", &EpochBatches::rank_batches)
      .def_property_readonly("worker_batches", &EpochBatches::worker_batches)
      .def("batch", &EpochBatches::batch)
      .def("rank_batch_index", &EpochBatches::rank_batch_index)
      .def("remaining_after",
           [](const EpochBatches& e, std::uint64_t received) {
             py::list out;
             for (const auto& r : e.remaining_after(received)) out.append(py::make_tuple(r.begin, r.end));
             return out;
           })
      .def_property_readonly("planned_for",
                             [](const EpochBatches& e) {
                               return py::make_tuple(e.planned_for().world_size, e.planned_for().num_workers);
                             })
      .def_property_readonly("blocks",
                             [](const EpochBatches& e) {
                               py::dict d;
                               d["block_samples"] = e.blocks().block_samples;
                               d["active_blocks"] = e.blocks().active_blocks;
                               return d;
                             })
      .def_property_readonly("warnings", &EpochBatches::warnings);

  m.def(
      "derived_forcing",
      [](const std::string& name, std::int64_t time_ns, const py::array_t<double, py::array::c_style | py::array::forcecast>& lat,
         const py::array_t<double, py::array::c_style | py::array::forcecast>& lon, std::optional<std::size_t> count) {
        const std::size_t n = count ? *count : static_cast<std::size_t>(std::max(lat.size(), lon.size()));
        py::array_t<double> out(static_cast<py::ssize_t>(n));
        batch::compute_derived_forcing(name, time_ns, {lat.data(), static_cast<std::size_t>(lat.size())},
                                       {lon.data(), static_cast<std::size_t>(lon.size())},
                                       {out.mutable_data(), n});
        return out;
      },
      py::arg("name"), py::arg("time_ns"), py::arg("lat"), py::arg("lon"), py::arg("count") = py::none(),
      "A derived forcing at one time on points (degrees), unscaled, float64.");
  m.attr("DERIVED_FORCINGS") = str_tuple(batch::derived_forcing_names());
  m.attr("FORECAST_KEYS") = str_tuple(ForecastSpec::json_keys());
  m.def("parse_duration_ns", [](const std::string& text, const std::string& field) {
    return batch::parse_duration_ns(text, field);
  }, py::arg("text"), py::arg("field") = "duration");
}

}  // namespace lazycube::python
