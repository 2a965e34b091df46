"""lazycube for xarray users: open a cube lazily, select, and iterate xbatcher-style batches.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/xarray_quickstart.py [URL]
"""
import sys

import xarray as xr

import lazycube

url = sys.argv[1] if len(sys.argv) > 1 else "data/era5_sample_v2.zarr"

# 1. xarray with the lazycube engine: nothing but metadata is read here.
ds = xr.open_dataset(url, engine="lazycube")
print(ds)

# 2. Indexing reads only the chunks it needs; CF decoding (scale/offset, times) is lazycube's.
noon = ds["t2m"].sel(time="2019-03-01T12:00").isel(latitude=slice(0, 8), longitude=slice(0, 8))
print("t2m at noon, corner mean:", float(noon.mean()))

# 3. The same batches xbatcher would give (here: 16x16 spatial patches, every time step).
gen = lazycube.BatchGenerator(ds, input_dims={"latitude": 16, "longitude": 16})
print(len(gen), "xbatcher-compatible batches; the first:")
print(gen[0])  # an xarray.Dataset, identical to xbatcher's batch 0

# 4. Training batches: 32 shuffled windows stacked as (sample, channel, time, lat, lon).
train = lazycube.BatchGenerator(ds, input_dims={"time": 1, "latitude": 32, "longitude": 32},
                                batch_size=32, variables=["t2m", "u10", "v10"],
                                shuffle="chunk", seed=0)
first = next(iter(train))
x = first.numpy()  # zero-copy NumPy view of the C++ batch buffer
print("stacked batch:", x.shape, x.dtype, "windows per epoch:", train.total_windows)
