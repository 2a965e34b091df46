// lazycube: lazy, fast reading of Zarr v2/v3 data cubes. Include this one header for the
// whole public C++ API (no GDAL, curl or torch headers come with it).
//
//   auto ds = lazycube::open("data/era5_sample_v2.zarr");
//   lazycube::NDArray t2m = ds["t2m"].isel({{"time", lazycube::Slice{0, 24}}}).read();
#pragma once

#include "lazycube/array.hpp"
#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/combine.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/dataset/selection.hpp"
#include "lazycube/dataset/variable.hpp"
#include "lazycube/dtype.hpp"
#include "lazycube/error.hpp"
#include "lazycube/ndarray.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "lazycube/zarr/writer.hpp"
