"""Writes the NetCDF-4/HDF5 test file both test suites read (C++: tests/cpp/support/gdal_test_files.hpp,
Python: test_gdal_backend.py) with netCDF4-python:

    /usr/bin/python3 tests/python/netcdf4_fixture.py OUT.nc

Chunked + zlib + shuffle; a time coordinate in "hours since 2000-01-01 00:00:00"; `t`, packed
int16 (float32 scale 0.01 and offset 273.15, so float32 decoded; _FillValue -32767 at two points); `w`, float32. The values
follow formulas the C++ test recomputes:
    t packed[ti, yi, xi] = (ti*7 + yi*3 + xi) % 2000 - 1000, fill at [1,2,3] and [5,19,29]
    w[ti, yi, xi] = ti + 0.1*yi + 0.01*xi (float32)
    time = 6*ti hours, y = 50 - 0.5*yi, x = -10 + 0.5*xi
"""

import sys

import numpy as np

NT, NY, NX = 6, 20, 30
T_CHUNKS = (2, 10, 15)
W_CHUNKS = (3, 20, 30)
FILL = -32767
FILL_POINTS = [(1, 2, 3), (5, 19, 29)]


def packed_t():
    ti, yi, xi = np.meshgrid(np.arange(NT), np.arange(NY), np.arange(NX), indexing="ij")
    packed = ((ti * 7 + yi * 3 + xi) % 2000 - 1000).astype("i2")
    for p in FILL_POINTS:
        packed[p] = FILL
    return packed


def values_w():
    ti, yi, xi = np.meshgrid(np.arange(NT), np.arange(NY), np.arange(NX), indexing="ij")
    return (ti + 0.1 * yi + 0.01 * xi).astype("f4")


def write(path):
    import netCDF4

    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.title = "lazycube NetCDF-4 fixture"
        ds.createDimension("time", None)
        ds.createDimension("y", NY)
        ds.createDimension("x", NX)
        time = ds.createVariable("time", "f8", ("time",))
        time.units = "hours since 2000-01-01 00:00:00"
        time.calendar = "standard"
        y = ds.createVariable("y", "f4", ("y",))
        y.units = "degrees_north"
        x = ds.createVariable("x", "f4", ("x",))
        x.units = "degrees_east"
        t = ds.createVariable("t", "i2", ("time", "y", "x"), zlib=True, shuffle=True,
                              chunksizes=T_CHUNKS, fill_value=FILL)
        t.scale_factor = np.float32(0.01)  # float32 attributes: t decodes to float32
        t.add_offset = np.float32(273.15)
        t.units = "K"
        t.long_name = "temperature"
        w = ds.createVariable("w", "f4", ("time", "y", "x"), zlib=True, shuffle=True,
                              chunksizes=W_CHUNKS)
        w.long_name = "wind"
        for v in (time, y, x, t, w):
            v.set_auto_maskandscale(False)
        time[:] = np.arange(NT) * 6.0
        y[:] = 50 - 0.5 * np.arange(NY)
        x[:] = -10 + 0.5 * np.arange(NX)
        t[:] = packed_t()
        w[:] = values_w()


if __name__ == "__main__":
    write(sys.argv[1])
