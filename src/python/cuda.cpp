// lazycube._core: the GPU hand-off (lazycube/adapters/cuda.hpp): whether CUDA is usable, and
// unpack + normalise on the CPU (NumPy in, float32 NumPy out) or on the GPU (raw device
// pointers and a cudaStream_t handle, as torch exposes them).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "convert.hpp"
#include "lazycube/adapters/cuda.hpp"
#include "lazycube/error.hpp"

namespace lazycube::python {

namespace {

using cuda::BatchShape;
using cuda::ChannelTransform;

std::optional<double> optional_double(const py::handle& v) {
  if (v.is_none()) return std::nullopt;
  return as_double(v);
}

// transforms: one dict per channel with the keys scale, offset, fill, missing, mean, std
// (each optional; fill/missing may be None).
std::vector<ChannelTransform> to_transforms(const py::handle& obj) {
  std::vector<ChannelTransform> out;
  if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj))
    throw UsageError("transforms must be a list of dicts (one per channel)");
  std::size_t c = 0;
  for (auto item : obj.cast<py::sequence>()) {
    if (!py::isinstance<py::dict>(item))
      throw UsageError("transforms[" + std::to_string(c) + "] must be a dict with scale, offset, "
                       "fill, missing, mean, std");
    ChannelTransform t;
    for (auto kv : item.cast<py::dict>()) {
      const std::string key = py::str(kv.first).cast<std::string>();
      const py::handle v = kv.second;
      if (key == "scale") t.scale = as_double(v);
      else if (key == "offset") t.offset = as_double(v);
      else if (key == "fill") t.fill = optional_double(v);
      else if (key == "missing") t.missing = optional_double(v);
      else if (key == "mean") t.mean = as_double(v);
      else if (key == "std") t.std = as_double(v);
      else
        throw UsageError("transforms[" + std::to_string(c) + "]: unknown key '" + key +
                         "' (expected scale, offset, fill, missing, mean, std)");
    }
    out.push_back(t);
    ++c;
  }
  return out;
}

py::array unpack_normalize_host(const py::array& in_array, const py::handle& transforms) {
  if (in_array.ndim() < 2)
    throw UsageError("unpack_normalize_host: the input must have dims (samples, channels, ...), got " +
                     std::to_string(in_array.ndim()) + " dim(s)");
  // C order, native byte order (a copy only when the input is not already so).
  auto numpy = py::module_::import("numpy");
  py::object native = in_array.dtype().attr("newbyteorder")("=");
  py::array in = numpy.attr("ascontiguousarray")(in_array, py::arg("dtype") = native);
  const DataType dtype = from_numpy_dtype(in.dtype());
  BatchShape shape{static_cast<std::uint64_t>(in.shape(0)), static_cast<std::uint64_t>(in.shape(1)), 1};
  std::vector<py::ssize_t> dims(in.shape(), in.shape() + in.ndim());
  for (py::ssize_t k = 2; k < in.ndim(); ++k) shape.inner *= static_cast<std::uint64_t>(in.shape(k));
  const auto channels = to_transforms(transforms);
  py::array_t<float> out(dims);
  const void* src = in.data();
  float* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    cuda::unpack_normalize_host(src, dtype, dst, shape, channels);
  }
  return out;
}

void unpack_normalize_device(std::uintptr_t in_ptr, const py::handle& dtype, std::uintptr_t out_ptr,
                             std::uint64_t samples, std::uint64_t channels, std::uint64_t inner,
                             const py::handle& transforms, std::uintptr_t stream) {
  const DataType t = from_numpy_dtype(dtype);
  const auto ch = to_transforms(transforms);
  py::gil_scoped_release release;
  cuda::unpack_normalize_device(reinterpret_cast<const void*>(in_ptr), t, reinterpret_cast<float*>(out_ptr),
                                BatchShape{samples, channels, inner}, ch, reinterpret_cast<void*>(stream));
}

}  // namespace

void bind_cuda(py::module_& m) {
  m.def("cuda_built", &cuda::built_with_cuda, "Whether lazycube's CUDA kernels are in this build.");
  m.def("cuda_device_count", &cuda::device_count,
        "CUDA devices usable by lazycube's kernels (0 without CUDA, a driver or a device).");
  m.def("cuda_unavailable_reason", &cuda::unavailable_reason,
        "Why cuda_device_count() is 0 ('' when a device is usable).");
  m.def("unpack_normalize_host", &unpack_normalize_host, py::arg("in_array"), py::arg("transforms"),
        "float32 (x * scale + offset - mean) / std per channel of a (samples, channels, ...) array; "
        "fill/missing values -> NaN. transforms: one dict per channel with scale, offset, fill, "
        "missing, mean, std.");
  m.def("unpack_normalize_device", &unpack_normalize_device, py::arg("in_ptr"), py::arg("dtype"),
        py::arg("out_ptr"), py::arg("samples"), py::arg("channels"), py::arg("inner"),
        py::arg("transforms"), py::arg("stream") = 0,
        "The same on the GPU: device pointers (e.g. tensor.data_ptr()), the input dtype, and a "
        "cudaStream_t handle (torch.cuda.Stream.cuda_stream; 0: the default stream). Asynchronous.");
}

}  // namespace lazycube::python
