"""NetCDF4/HDF5 variables whose chunks lazycube reads and decodes itself (src/refs/
hdf5_native_chunks.cpp: pread + its own zlib/shuffle/fletcher32, every thread at once) read the
same as through netCDF4-python, raw and CF-decoded: chunks cut by the array's edge, chunks never
written (the HDF5 fill value: _FillValue or netCDF's default fill), fletcher32, zlib without
shuffle, unlimited dims, groups; and the variables it leaves to GDAL (big-endian, contiguous,
strings) still read right. A damaged chunk is a clear error naming the file, the variable and
the chunk; `lazycube convert` of such a file reads back identical in xarray."""

import json
import subprocess

import numpy as np
import pytest

from conftest import import_lazycube

lazycube = import_lazycube()
netCDF4 = pytest.importorskip("netCDF4", reason="netCDF4-python (python3-netcdf4) is needed")
xr = pytest.importorskip("xarray")

SHAPE = (7, 13, 17)


def values(seed, dtype):
    rng = np.random.default_rng(seed)
    return (rng.normal(0, 100, size=SHAPE)).astype(dtype)


@pytest.fixture(scope="module")
def nc(tmp_path_factory):
    path = tmp_path_factory.mktemp("native") / "native.nc"
    with netCDF4.Dataset(str(path), "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        ds.createDimension("y", SHAPE[1])
        ds.createDimension("x", SHAPE[2])
        ds.createVariable("time", "i4", ("time",))[:] = np.arange(SHAPE[0])
        ds["time"].units = "hours since 2000-01-01"
        # edges in every dim (7/3, 13/5, 17/6), fletcher32, a _FillValue, two chunks never written
        a = ds.createVariable("a", "f4", ("time", "y", "x"), zlib=True, shuffle=True, fletcher32=True,
                              chunksizes=(3, 5, 6), fill_value=np.float32(-9999))
        a.units = "K"
        full = values(1, "f4")
        a[0:6] = full[0:6]  # time 6 (the last chunk row) never written
        a[6, 0:5, 0:6] = full[6, 0:5, 0:6]  # but this one chunk of it is
        # zlib without shuffle, no _FillValue (netCDF's default fill for unwritten chunks)
        b = ds.createVariable("b", "i2", ("time", "y", "x"), zlib=True, complevel=9, shuffle=False,
                              chunksizes=(2, 13, 17))
        b[0:4] = (values(2, "f4")[0:4]).astype("i2")
        b.scale_factor = np.float32(0.1)
        # left to GDAL: big-endian, contiguous
        c = ds.createVariable("c", ">f8", ("time", "y", "x"), endian="big", zlib=True, chunksizes=(1, 13, 17))
        c[:] = values(3, "f8")
        d = ds.createVariable("d", "u1", ("y", "x"), contiguous=True)
        d[:] = (np.arange(SHAPE[1] * SHAPE[2]) % 251).reshape(SHAPE[1:]).astype("u1")
        g = ds.createGroup("g")
        e = g.createVariable("e", "f8", ("time", "y", "x"), zlib=True, shuffle=True, chunksizes=(4, 4, 4))
        e[:] = values(4, "f8")
    return path


def test_raw_values_equal_netcdf4_python(nc):
    ds = lazycube.open_dataset(str(nc), decode_cf=False)
    with netCDF4.Dataset(str(nc)) as ref:
        ref.set_auto_maskandscale(False)
        for name, want in [(n, ref[n][:]) for n in ("a", "b", "c", "d")] + [("g/e", ref["g"]["e"][:])]:
            got = ds[name].values  # a nested group's variable: GDAL names it "g/e"
            assert got.dtype == want.dtype.newbyteorder("="), name
            np.testing.assert_array_equal(got, want, err_msg=name)


def test_decoded_values_equal_xarray(nc):
    ds = lazycube.open_dataset(str(nc))
    with xr.open_dataset(str(nc)) as ref:
        for name in ("a", "b", "c", "d", "time"):
            assert ds[name].dtype == ref[name].dtype, name
            np.testing.assert_array_equal(ds[name].values, ref[name].values, err_msg=name)


def test_unwritten_chunks_are_the_fill_value(nc):
    raw = lazycube.open_dataset(str(nc), decode_cf=False)
    a = raw["a"].values
    assert (a[6, 5:, :] == -9999).all() and (a[6, :, 6:] == -9999).all()
    assert not (a[6, 0:5, 0:6] == -9999).any()
    b = raw["b"].values
    assert (b[4:] == netCDF4.default_fillvals["i2"]).all()
    decoded = lazycube.open_dataset(str(nc))["a"].values
    assert np.isnan(decoded[6, 5:, :]).all()


def test_windows_and_selections_across_chunk_edges(nc):
    ds = lazycube.open_dataset(str(nc), decode_cf=False)
    with netCDF4.Dataset(str(nc)) as ref:
        ref.set_auto_maskandscale(False)
        want = ref["a"][:]
    for t, y, x in [(slice(1, 7, 2), slice(12, 0, -3), slice(4, 17, 5)), (6, slice(3, 8), slice(None)),
                    (slice(None), 12, 16)]:
        np.testing.assert_array_equal(ds["a"].isel(time=t, y=y, x=x).values, want[t, y, x])


def test_damaged_chunk_is_an_error_naming_it(nc, tmp_path, lazycube_cli):
    damaged = tmp_path / "damaged.nc"
    data = bytearray(nc.read_bytes())
    # the first chunk of "g/e" (f8, zlib): where it lies, from `lazycube refs`
    refs = subprocess.run([str(lazycube_cli), "refs", str(nc), "-o", str(tmp_path / "refs.json")],
                          capture_output=True, text=True)
    assert refs.returncode == 0, refs.stderr
    table = json.loads((tmp_path / "refs.json").read_text())["refs"]
    _, offset, length = table["g/e/0.0.0"]
    data[offset + length // 2: offset + length // 2 + 16] = b"\xff" * 16
    damaged.write_bytes(bytes(data))
    ds = lazycube.open_dataset(str(damaged), decode_cf=False)
    with pytest.raises(lazycube.CodecError) as err:
        ds["g/e"].values
    text = str(err.value)
    assert "damaged.nc" in text and "0.0.0" in text and "'g/e'" in text


def test_convert_reads_back_identical(nc, tmp_path, lazycube_cli):
    out = tmp_path / "out.zarr"
    run = subprocess.run([str(lazycube_cli), "convert", str(nc), str(out), "--format", "2", "--variables", "a,b,c,d",
                          "--chunks", "time=4,y=7,x=9", "--no-progress"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with xr.open_dataset(str(nc)) as src, xr.open_dataset(str(out), engine="zarr") as dst:
        xr.testing.assert_identical(dst[["a", "b", "c", "d"]].load(), src[["a", "b", "c", "d"]].load())
