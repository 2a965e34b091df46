// lazycube._core: the compiled binding. Every call that reads (metadata, coordinates, chunks)
// runs with the GIL released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sys/stat.h>

#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "convert.hpp"
#include "lazycube/dataset/combine.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/format/registry.hpp"
#include "lazycube/zarr/consolidated.hpp"

namespace lazycube::python {

void bind_batch(py::module_& m);  // batch.cpp
void bind_cuda(py::module_& m);   // cuda.cpp
void bind_memory(py::module_& m);  // memory.cpp
void bind_cf_encode(py::module_& m);  // cf_encode.cpp
void bind_zarr_output(py::module_& m);  // zarr_output.cpp
void bind_zarr_writer(py::module_& m);  // zarr_writer.cpp
void bind_window_grid(py::module_& m);  // window_grid.cpp
void bind_stats(py::module_& m);  // stats.cpp
void bind_forecast(py::module_& m);  // forecast.cpp

namespace {

// The Python classes of python/lazycube/_errors.py, looked up once at import.
struct ErrorClasses {
  py::object base, not_found, selection, usage, store, auth, codec, metadata, missing_data;
};
ErrorClasses* g_errors = nullptr;

void set_error(const py::object& cls, const std::exception& e) { PyErr_SetString(cls.ptr(), e.what()); }

void translate(std::exception_ptr p) {
  if (!p) return;
  const ErrorClasses& c = *g_errors;
  try {
    std::rethrow_exception(p);
  } catch (const NotFound& e) {  // before StoreError, its C++ base
    set_error(c.not_found, e);
  } catch (const AuthError& e) {
    set_error(c.auth, e);
  } catch (const StoreError& e) {
    set_error(c.store, e);
  } catch (const SelectionError& e) {
    set_error(c.selection, e);
  } catch (const UsageError& e) {
    set_error(c.usage, e);
  } catch (const CodecError& e) {
    set_error(c.codec, e);
  } catch (const MetadataError& e) {
    set_error(c.metadata, e);
  } catch (const MissingDataError& e) {
    set_error(c.missing_data, e);
  } catch (const Error& e) {
    set_error(c.base, e);
  }
}

// Indexers as Python values: an int, or a slice (missing ends as None).
py::dict indexers_to_py(const Indexers& indexers) {
  py::object slice = py::module_::import("builtins").attr("slice");
  auto end = [](const std::optional<std::int64_t>& v) { return v ? py::object(py::int_(*v)) : py::object(py::none()); };
  py::dict out;
  for (const auto& [dim, ix] : indexers) {
    if (const auto* i = std::get_if<std::int64_t>(&ix))
      out[py::str(dim)] = py::int_(*i);
    else {
      const Slice& s = std::get<Slice>(ix);
      out[py::str(dim)] = slice(end(s.start), end(s.stop), py::int_(s.step));
    }
  }
  return out;
}

// The positional indexers (isel) that `obj.sel(labels)` applies, so that a label selection can
// be recorded and replayed by position (python/lazycube/pipeline.py). `coord_of(dim)`: the index
// coordinate sel() reads for `dim`.
template <class T, class CoordOf>
py::dict sel_positions(const T& obj, const py::object& indexers, const py::object& method,
                       const py::object& tolerance, CoordOf coord_of) {
  LabelIndexers labels = to_label_indexers(indexers);
  SelOptions o = to_sel_options(method, tolerance);
  Indexers out;
  {
    py::gil_scoped_release release;
    (void)obj.sel(labels, o);  // sel()'s own checks and errors (unknown dim, no index coordinate)
    for (const auto& [dim, label] : labels) out.emplace(dim, label_to_indexer(coord_of(dim), dim, label, o));
  }
  return indexers_to_py(out);
}

py::list dims_list(const std::vector<std::pair<std::string, std::uint64_t>>& dims) {
  py::list out;
  for (const auto& [name, size] : dims) out.append(py::make_tuple(name, size));
  return out;
}

// A Zarr open of a local path that does not exist: xarray's words for it (its zarr engine
// raises FileNotFoundError("No such file or directory: '<absolute path>'"), which users match
// on), naming the path as xarray normalises it. nullopt for URLs, /vsi paths, the gdal engine
// and paths that exist (their NotFound says what is missing inside).
std::optional<std::string> missing_local_store(const std::string& url, const OpenOptions& options) {
  std::string path = url;
  if (path.rfind("file://", 0) == 0) path = path.substr(7);
  else if (path.find("://") != std::string::npos) return std::nullopt;
  if (path.empty() || path.rfind("/vsi", 0) == 0 || format::url_format(url, options.engine)) return std::nullopt;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return std::nullopt;
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) return std::nullopt;
  std::string text = abs.lexically_normal().string();  // os.path.abspath: no "..", no trailing /
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return "No such file or directory: '" + (url.rfind("file://", 0) == 0 ? url : text) + "'";
}

// The dtype a Variable reads as in Python: object for strings a _FillValue masks (NaN where
// masked, as xarray), else the decoded dtype.
py::dtype variable_numpy_dtype(const Variable& v) {
  return v.cf().masks_strings() ? py::dtype("O") : to_numpy_dtype(v.dtype());
}

// Fixed-length strings with a fill value as xarray's CFMaskCoder gives them: an object array of
// the values (bytes or str, trailing NULs dropped as numpy does), NaN where an element is the fill.
py::object masked_strings_to_numpy(const NDArray& a, const CfDecoding& cf) {
  py::array values = ndarray_to_numpy(NDArray(a));
  py::array out = values.attr("astype")(py::dtype("O"));
  auto* items = static_cast<PyObject**>(out.mutable_data());
  const std::size_t n = a.dtype.itemsize;
  const std::size_t count = shape_size(a.shape);
  py::float_ nan(std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < count; ++i) {
    if (!cf.is_string_fill(a.data.data() + i * n)) continue;
    Py_XDECREF(items[i]);
    items[i] = nan.inc_ref().ptr();
  }
  return py::object(out);
}

}  // namespace

}  // namespace lazycube::python

PYBIND11_MODULE(_core, m) {
  using namespace lazycube;
  using namespace lazycube::python;
  m.doc() = "lazycube's compiled core: Zarr datasets and training batches (see lazycube/__init__.py)";
#ifdef LAZYCUBE_VERSION
  m.attr("__version__") = LAZYCUBE_VERSION;
#else
  m.attr("__version__") = "0+unknown";
#endif

  {
    py::module_ errors = py::module_::import("lazycube._errors");
    g_errors = new ErrorClasses{errors.attr("Error"),          errors.attr("NotFoundError"),
                                errors.attr("SelectionError"), errors.attr("UsageError"),
                                errors.attr("StoreError"),     errors.attr("AuthError"),
                                errors.attr("CodecError"),     errors.attr("MetadataError"),
                                errors.attr("MissingDataError")};
    py::register_exception_translator(&translate);
  }

  m.def(
      "open",
      [](const std::string& url, std::optional<std::map<std::string, std::string>> storage_options,
         bool decode_cf, std::optional<std::string> engine, bool mask_valid_range, std::optional<std::string> group,
         bool concat_characters, const py::object& decode_coords, const py::object& format_options,
         bool struct_fields, std::vector<std::string> drop_variables, std::string scale_dtype_rule) {
        OpenOptions o;
        o.struct_fields = struct_fields;
        o.drop_variables = std::move(drop_variables);
        o.scale_dtype_rule = std::move(scale_dtype_rule);
        o.concat_characters = concat_characters;
        // xarray's decode_coords: True / "coordinates", "all", False / None (off).
        if (decode_coords.is_none() || (py::isinstance<py::bool_>(decode_coords) && !decode_coords.cast<bool>()))
          o.decode_coords = "";
        else if (py::isinstance<py::bool_>(decode_coords))
          o.decode_coords = "coordinates";
        else
          o.decode_coords = decode_coords.cast<std::string>();
        if (storage_options) o.storage_options = *storage_options;
        o.decode_cf = decode_cf;
        if (engine) o.engine = *engine;
        o.mask_valid_range = mask_valid_range;
        if (group) o.group = *group;
        if (!format_options.is_none()) o.format_options = py_to_json(format_options);
        py::gil_scoped_release release;
        try {
          return lazycube::open(url, o);
        } catch (const NotFound&) {
          if (auto message = missing_local_store(url, o)) throw NotFound(*message);
          throw;
        }
      },
      py::arg("url"), py::arg("storage_options") = py::none(), py::arg("decode_cf") = true,
      py::arg("engine") = py::none(), py::arg("mask_valid_range") = false, py::arg("group") = py::none(),
      py::arg("concat_characters") = true, py::arg("decode_coords") = true, py::arg("format_options") = py::none(),
      py::arg("struct_fields") = false, py::arg("drop_variables") = std::vector<std::string>{},
      py::arg("scale_dtype_rule") = "attributes",
      "Opens what the format registry recognises at `url` (or the format `engine` names): a Zarr v2/v3\n"
      "group or array (`group`: a node path below the URL), an Icechunk repository, a kerchunk reference\n"
      "set, or a NetCDF/HDF5/GRIB file through GDAL. `format_options`: the formats' own options, one\n"
      "dict (consolidated; branch, tag, snapshot, virtual_chunk_containers: docs/formats.md).\n"
      "`struct_fields`: each array of records (Zarr v3 struct) as one variable per field, \"<array>.<field>\".\n"
      "`drop_variables`: names left out (xarray's drop_variables), arrays lazycube cannot read included\n"
      "(the others: Dataset.unreadable). `scale_dtype_rule`: \"attributes\" (xarray >= 2024.02) or \"stored\"\n"
      "(xarray < 2024.02), the unpacked type of scale_factor/add_offset variables.");

  m.def("unconsolidated_fallbacks", &zarr::unconsolidated_fallbacks_on_this_thread,
        "How many Zarr v2 groups this thread has opened with consolidated=None that had no .zmetadata\n"
        "(neither at the group nor at the store's root) and were read by listing instead: compare it\n"
        "before and after open() (the xarray engine warns as xarray's zarr engine does).");

  py::class_<Variable>(m, "Variable")
      .def_property_readonly("name", &Variable::name)
      .def_property_readonly("dims", [](const Variable& v) { return str_tuple(v.dims()); })
      .def_property_readonly("shape", [](const Variable& v) { return shape_to_tuple(v.shape()); })
      .def_property_readonly("ndim", &Variable::ndim)
      .def_property_readonly("size", &Variable::size)
      .def_property_readonly("dtype", [](const Variable& v) { return variable_numpy_dtype(v); })
      .def_property_readonly("stored_dtype",
                             [](const Variable& v) { return to_numpy_dtype(v.stored_dtype()); })
      .def_property_readonly("attrs", [](const Variable& v) { return json_to_py(v.attrs()); })
      .def_property_readonly("encoding", [](const Variable& v) { return json_to_py(v.encoding()); })
      .def_property_readonly("chunks", [](const Variable& v) { return shape_to_tuple(v.chunks()); })
      // The array's codecs as its metadata spells them (Zarr v2: {"compressor", "filters"}).
      .def_property_readonly("codecs", [](const Variable& v) { return json_to_py(v.array()->codecs_json()); })
      .def(
          "isel",
          [](const Variable& v, const py::object& indexers) {
            Indexers ix = to_indexers(indexers);
            py::gil_scoped_release release;
            return v.isel(ix);
          },
          py::arg("indexers") = py::none())
      .def(
          "sel",
          [](const Variable& v, const py::object& indexers, const py::object& method,
             const py::object& tolerance) {
            LabelIndexers ix = to_label_indexers(indexers);
            SelOptions o = to_sel_options(method, tolerance);
            py::gil_scoped_release release;
            return v.sel(ix, o);
          },
          py::arg("indexers") = py::none(), py::arg("method") = py::none(),
          py::arg("tolerance") = py::none())
      .def(
          "sel_positions",
          [](const Variable& v, const py::object& indexers, const py::object& method,
             const py::object& tolerance) {
            return sel_positions(v, indexers, method, tolerance,
                                 [&v](const std::string& dim) { return *v.index_coord(dim); });
          },
          py::arg("indexers") = py::none(), py::arg("method") = py::none(),
          py::arg("tolerance") = py::none())
      .def("read",
           [](const Variable& v) {
             NDArray a;
             {
               py::gil_scoped_release release;
               a = v.read();
             }
             if (v.cf().masks_strings()) return masked_strings_to_numpy(a, v.cf());
             return py::object(ndarray_to_numpy(std::move(a)));
           })
      .def("read_raw",
           [](const Variable& v) {
             NDArray a;
             {
               py::gil_scoped_release release;
               a = v.read_raw();
             }
             return ndarray_to_numpy(std::move(a));
           })
      .def("__repr__", [](const Variable& v) {
        std::string dims;
        for (std::size_t i = 0; i < v.dims().size(); ++i)
          dims += (i ? ", " : "") + v.dims()[i] + ": " + std::to_string(v.shape()[i]);
        return "<lazycube._core.Variable '" + v.name() + "' (" + dims + ") " + v.dtype().name() + ">";
      });

  py::class_<Dataset>(m, "Dataset")
      .def_property_readonly("dims", [](const Dataset& d) { return dims_list(d.dims()); })
      .def_property_readonly("attrs", [](const Dataset& d) { return json_to_py(d.attrs()); })
      .def("variable_names", &Dataset::variable_names)
      .def_property_readonly("unreadable",
                             [](const Dataset& d) {
                               std::vector<std::pair<std::string, std::string>> out;
                               for (const auto& u : d.unreadable()) out.emplace_back(u.name, u.reason);
                               return out;
                             },
                             "[(name, reason)] of the arrays lazycube cannot read (not variables of the dataset).")
      .def_property_readonly("cf_warnings", &Dataset::cf_warnings,
                             "What xarray's decode_cf would warn about this dataset (its words).")
      .def("require_readable", &Dataset::require_readable, py::arg("advice") = "",
           "Raises the first unreadable array's error (naming every one and its reason, then `advice`).")
      .def("coord_names", &Dataset::coord_names)
      .def("data_var_names", &Dataset::data_var_names)
      .def("__getitem__", [](const Dataset& d, const std::string& name) { return d.variable(name); })
      .def("__contains__", [](const Dataset& d, const py::object& name) {
        return py::isinstance<py::str>(name) && d.contains(name.cast<std::string>());
      })
      .def("__len__", [](const Dataset& d) { return d.variable_names().size(); })
      .def("subset", &Dataset::subset, py::arg("names"))
      .def(
          "isel",
          [](const Dataset& d, const py::object& indexers) {
            Indexers ix = to_indexers(indexers);
            py::gil_scoped_release release;
            return d.isel(ix);
          },
          py::arg("indexers") = py::none())
      .def(
          "sel",
          [](const Dataset& d, const py::object& indexers, const py::object& method,
             const py::object& tolerance) {
            LabelIndexers ix = to_label_indexers(indexers);
            SelOptions o = to_sel_options(method, tolerance);
            py::gil_scoped_release release;
            return d.sel(ix, o);
          },
          py::arg("indexers") = py::none(), py::arg("method") = py::none(),
          py::arg("tolerance") = py::none())
      .def(
          "sel_positions",
          [](const Dataset& d, const py::object& indexers, const py::object& method,
             const py::object& tolerance) {
            return sel_positions(d, indexers, method, tolerance,
                                 [&d](const std::string& dim) { return d.variable(dim); });
          },
          py::arg("indexers") = py::none(), py::arg("method") = py::none(),
          py::arg("tolerance") = py::none())
      .def("__repr__", [](const Dataset& d) {
        std::string dims;
        for (std::size_t i = 0; i < d.dims().size(); ++i)
          dims += (i ? ", " : "") + d.dims()[i].first + ": " + std::to_string(d.dims()[i].second);
        return "<lazycube._core.Dataset (" + dims + ") " + std::to_string(d.variable_names().size()) +
               " variables>";
      });

  m.def(
      "concat",
      [](const std::vector<Dataset>& parts, const std::string& dim, const std::vector<std::string>& labels) {
        py::gil_scoped_release release;
        return lazycube::concat(parts, dim, labels);
      },
      py::arg("datasets"), py::arg("dim"), py::arg("labels") = std::vector<std::string>{},
      "The datasets joined along `dim` (lazycube/dataset/combine.hpp: xarray's open_mfdataset with\n"
      "combine='nested'); `labels` name them in errors.");
  m.def(
      "merge",
      [](const std::vector<Dataset>& parts, const std::vector<std::string>& labels) {
        py::gil_scoped_release release;
        return lazycube::merge(parts, labels);
      },
      py::arg("datasets"), py::arg("labels") = std::vector<std::string>{},
      "The variables of all datasets in one (shared variables must be equal); `labels` name them in errors.");

  bind_batch(m);
  bind_cuda(m);
  bind_memory(m);
  bind_cf_encode(m);
  bind_zarr_output(m);
  bind_zarr_writer(m);
  bind_window_grid(m);
  bind_stats(m);
  bind_forecast(m);
}
