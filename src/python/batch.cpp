// lazycube._core.BatchGenerator / Batch / BatchArray over lazycube::batch.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

#include "convert.hpp"
#include "lazycube/adapters/cuda.hpp"
#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/batch/xbatcher_schema.hpp"
#include "lazycube/error.hpp"

namespace lazycube::python {

using lazycube::batch::Batch;
using lazycube::batch::BatchArray;
using lazycube::batch::BatchGenerator;
using lazycube::batch::BatchOptions;

namespace {

batch::DimSizes to_dim_sizes(const py::handle& obj, const char* what) {
  batch::DimSizes out;
  if (obj.is_none()) return out;
  if (!py::isinstance<py::dict>(obj))
    throw UsageError(std::string(what) + " must be a dict of dim name -> size");
  for (auto item : obj.cast<py::dict>()) {
    const auto n = as_int64(item.second);
    if (n < 0)
      throw UsageError(std::string(what) + "['" + py::str(item.first).cast<std::string>() +
                       "'] must not be negative");
    out.emplace_back(py::str(item.first).cast<std::string>(), static_cast<std::uint64_t>(n));
  }
  return out;
}

py::list str_list(const std::vector<std::string>& v) {
  py::list out;
  for (const auto& s : v) out.append(py::str(s));
  return out;
}

// xbatcher's batch -> patches arithmetic over dim sizes alone, for data the core does not read
// (in-memory or dask-backed xarray objects): lazycube.batch serves those windows itself.
std::unique_ptr<batch::XbatcherSchema> make_schema(const py::object& dataset_dims,
                                                   const py::object& input_dims,
                                                   const py::object& input_overlap,
                                                   const py::object& batch_dims,
                                                   bool concat_input_dims) {
  // the dims as the generator's document takes them (BatchOptions::from_json)
  nlohmann::ordered_json doc = {{"input_dims", py_to_ordered_json(input_dims)},
                                {"input_overlap", py_to_ordered_json(input_overlap)},
                                {"batch_dims", py_to_ordered_json(batch_dims)},
                                {"concat_input_dims", concat_input_dims}};
  BatchOptions o = BatchOptions::from_json(doc);
  batch::XbatcherConfig c;
  c.input_dims = std::move(o.input_dims);
  c.input_overlap = std::move(o.input_overlap);
  c.batch_dims = std::move(o.batch_dims);
  c.concat_input_dims = o.concat_input_dims;
  return std::make_unique<batch::XbatcherSchema>(to_dim_sizes(dataset_dims, "dataset_dims"),
                                                 std::move(c));
}

// The generator's arguments as one document (lazycube.pipeline.Pipeline's `generator` dict,
// or keywords), parsed by BatchOptions::from_json; `input_dims` may come positionally. Only
// `pinned` is the binding's own: page-locked batch buffers come from the CUDA adapter.
std::unique_ptr<BatchGenerator> make_generator(const Dataset& dataset, const py::object& input_dims,
                                               const py::kwargs& document) {
  nlohmann::ordered_json doc = py_to_ordered_json(document);
  if (!input_dims.is_none()) {
    if (doc.contains("input_dims")) throw UsageError("input_dims given twice (positionally and by name)");
    doc["input_dims"] = py_to_ordered_json(input_dims);
  }
  bool pinned = false;
  if (auto it = doc.find("pinned"); it != doc.end()) {
    if (!it->is_null() && !it->is_boolean()) throw UsageError("pinned must be true or false");
    pinned = it->is_boolean() && it->get<bool>();
    doc.erase(it);
  }
  BatchOptions o = BatchOptions::from_json(doc);
  // Page-locked batch buffers for fast host-to-GPU copies (UsageError without a usable device).
  if (pinned) o.allocator = cuda::pinned_allocator();
  py::gil_scoped_release release;
  return std::make_unique<BatchGenerator>(dataset, std::move(o));
}

py::dict stats_dict(const CacheStats& s) {
  py::dict d;
  d["hits"] = s.hits;
  d["misses"] = s.misses;
  d["evictions"] = s.evictions;
  d["bytes_fetched"] = s.bytes_fetched;
  d["bytes_delivered"] = s.bytes_delivered;
  d["bytes_unique"] = s.bytes_unique;
  d["bytes_cached"] = s.bytes_cached;
  d["peak_bytes_cached"] = s.peak_bytes_cached;
  d["entries"] = s.entries;
  d["budget_bytes"] = s.budget_bytes;
  d["fetched_ahead"] = s.fetched_ahead;
  d["fetched_ahead_unused"] = s.fetched_ahead_unused;
  d["hit_rate"] = s.hit_rate();
  d["read_amplification"] = s.read_amplification();
  return d;
}

py::array batch_array_numpy(const BatchArray& a) { return shared_to_numpy(a.dtype, a.shape, a.data); }

// The per-batch path of torch training loops (lazycube.torch.BatchDataset): the arrays go
// straight to NumPy, without a Batch object and copies of its BatchArrays (dims, names) that
// the loop would only drop. Its cost is on the consumer's thread, which shares the cores with
// the threads assembling the next batches.
py::object next_arrays(BatchGenerator& g) {
  if (g.options().batch_size == 0)
    throw UsageError("next_arrays(): the generator is in xbatcher-compatibility mode (batch_size 0); use next()");
  std::optional<Batch> b;
  {
    py::gil_scoped_release release;
    b = g.next();
  }
  if (!b) return py::none();
  if (b->arrays.empty()) throw UsageError("next_arrays(): the batch has no arrays");
  py::object y = b->target ? py::object(batch_array_numpy(*b->target)) : py::none();
  return py::make_tuple(batch_array_numpy(b->arrays.front()), std::move(y));
}

}  // namespace

void bind_batch(py::module_& m) {
  m.def("shuffle_orders", [] {
    std::vector<std::string> names;
    for (const batch::Shuffle s : batch::registered_shuffles()) names.emplace_back(s.name());
    return names;
  }, "Names of the registered window orders: 'none', 'random', 'chunk', then any other.");
  py::class_<BatchArray>(m, "BatchArray")
      .def_readonly("name", &BatchArray::name)
      .def_property_readonly("dims", [](const BatchArray& a) { return str_tuple(a.dims); })
      .def_property_readonly("shape", [](const BatchArray& a) { return shape_to_tuple(a.shape); })
      .def_property_readonly("dtype", [](const BatchArray& a) { return to_numpy_dtype(a.dtype); })
      .def_readonly("nbytes", &BatchArray::nbytes)
      .def("numpy", &batch_array_numpy, "A zero-copy NumPy view of the batch buffer.")
      .def(
          "__array__",
          [](const BatchArray& a, const py::object& dtype) {
            py::array arr = batch_array_numpy(a);
            if (dtype.is_none()) return arr;
            return py::array(arr.attr("astype")(dtype, py::arg("copy") = false));
          },
          py::arg("dtype") = py::none())
      .def("__repr__", [](const BatchArray& a) {
        std::string s = "<lazycube._core.BatchArray '" + a.name + "' (";
        for (std::size_t i = 0; i < a.dims.size(); ++i)
          s += (i ? ", " : "") + a.dims[i] + ": " + std::to_string(a.shape[i]);
        return s + ") " + a.dtype.name() + ">";
      });

  py::class_<Batch>(m, "Batch")
      .def_readonly("epoch", &Batch::epoch)
      .def_readonly("index", &Batch::index)
      .def_readonly("arrays", &Batch::arrays)
      .def_readonly("target", &Batch::target)
      .def_readonly("channels", &Batch::channels)
      .def_readonly("target_channels", &Batch::target_channels)
      .def_readonly("window_dims", &Batch::window_dims)
      .def_property_readonly("windows",
                             [](const Batch& b) {
                               py::list out;
                               for (const auto& w : b.windows) {
                                 py::list ranges;
                                 for (const auto& r : w) ranges.append(py::make_tuple(r.start, r.count));
                                 out.append(std::move(ranges));
                               }
                               return out;
                             })
      .def_readonly("window_ids", &Batch::window_ids)
      .def_property_readonly("coords",
                             [](const Batch& b) {
                               py::dict out;
                               for (const auto& [dim, arr] : b.coords)
                                 out[py::str(dim)] = ndarray_to_numpy(NDArray(arr));
                               return out;
                             })
      .def_property_readonly("layouts",
                             [](const Batch& b) {
                               py::list out;
                               for (const auto& l : b.layouts) {
                                 py::dict d;
                                 d["dims"] = str_list(l.dims);
                                 d["shape"] = shape_to_tuple(l.shape);
                                 d["sample_dims"] = str_list(l.sample_dims);
                                 out.append(std::move(d));
                               }
                               return out;
                             })
      .def_property_readonly("nbytes", &Batch::nbytes)
      .def("__repr__", [](const Batch& b) {
        return "<lazycube._core.Batch epoch=" + std::to_string(b.epoch) + " index=" +
               std::to_string(b.index) + " arrays=" + std::to_string(b.arrays.size()) + ">";
      });

  py::class_<BatchGenerator>(m, "BatchGenerator")
      .def(py::init(&make_generator), py::arg("dataset"), py::arg("input_dims") = py::none(),
           "A generator over `dataset` from one document of batch options: the keywords "
           "BatchOptions::from_json takes (docs/batching.md \"One document\"), and pinned.")
      .def("__len__", [](const BatchGenerator& g) { return g.size(); })
      .def_property_readonly("total_windows", &BatchGenerator::total_windows)
      .def_property_readonly("shard_windows", &BatchGenerator::shard_windows)
      .def(
          "batch",
          [](const BatchGenerator& g, std::uint64_t i, std::uint64_t epoch) {
            py::gil_scoped_release release;
            return g.batch(i, epoch);
          },
          py::arg("i"), py::arg("epoch") = 0)
      .def("next",
           [](BatchGenerator& g) {
             py::gil_scoped_release release;
             return g.next();
           })
      .def("next_arrays", &next_arrays,
           "The next batch as zero-copy NumPy arrays, (x, y) with y None without a target, or None "
           "at the end of the epoch: next() without the Batch object, for training loops that only "
           "need the data (stacked mode).")
      .def(
          "set_epoch",
          [](BatchGenerator& g, std::uint64_t e) {
            py::gil_scoped_release release;
            g.set_epoch(e);
          },
          py::arg("epoch"))
      .def_property_readonly("epoch", &BatchGenerator::epoch)
      .def("state", [](const BatchGenerator& g) { return json_to_py(g.state()); })
      .def(
          "restore",
          [](BatchGenerator& g, const py::object& state) {
            nlohmann::json j = py_to_json(state);
            py::gil_scoped_release release;
            g.restore(j);
          },
          py::arg("state"))
      .def("cache_stats", [](const BatchGenerator& g) { return stats_dict(g.cache()->stats()); })
      .def_property_readonly("fetch_ahead_bytes", &BatchGenerator::fetch_ahead_bytes)
      .def(
          "block_plan",
          [](const BatchGenerator& g, std::uint32_t world_size, std::uint32_t num_workers) -> py::object {
            const auto plan = g.block_plan(world_size, num_workers);
            if (!plan) return py::none();
            return py::make_tuple(plan->block_samples, plan->active_blocks);
          },
          py::arg("world_size") = 1, py::arg("num_workers") = 1,
          "(block_samples, active_blocks) of the epoch planner for a job of world_size x "
          "num_workers shards, or None when the windows keep the chunk groups.")
      .def_property_readonly("warnings", [](const BatchGenerator& g) { return str_list(g.warnings()); })
      .def_property_readonly("mode",
                             [](const BatchGenerator& g) {
                               return g.options().batch_size > 0 ? "stacked" : "xbatcher";
                             })
      .def_property_readonly("dataset", [](const BatchGenerator& g) { return g.dataset(); })
      .def_property_readonly("options", [](const BatchGenerator& g) {
        // The resolved options as state() records them (config), for reprs and debugging.
        return json_to_py(g.state().value("config", nlohmann::json::object()));
      });

  py::class_<batch::XbatcherSchema>(m, "XbatcherSchema",
                                    "xbatcher 0.4.0's batches as patch selectors over dim sizes "
                                    "(the arithmetic of xbatcher mode, without a dataset).")
      .def(py::init(&make_schema), py::arg("dataset_dims"), py::arg("input_dims"),
           py::arg("input_overlap") = py::none(), py::arg("batch_dims") = py::none(),
           py::arg("concat_input_dims") = false)
      .def("__len__", [](const batch::XbatcherSchema& s) { return s.size(); })
      .def(
          "patches",
          [](const batch::XbatcherSchema& s, std::uint64_t b) {
            // [{dim: slice(start, stop)}, ...] in xbatcher's patch order: isel selectors
            py::list out;
            for (const auto& patch : s.patches(b)) {
              py::dict sel;
              for (const auto& [dim, r] : patch) {
                py::object start = py::int_(r.start), stop = py::int_(r.start + r.count);
                sel[py::str(dim)] = py::reinterpret_steal<py::object>(
                    PySlice_New(start.ptr(), stop.ptr(), nullptr));
              }
              out.append(std::move(sel));
            }
            return out;
          },
          py::arg("b"))
      .def_property_readonly("warnings",
                             [](const batch::XbatcherSchema& s) { return str_list(s.warnings()); });
}

}  // namespace lazycube::python
