"""One CF decoding policy on every path: the same packed int16 variables written as NetCDF-4
(read directly, through GDAL), as kerchunk references to that file (`lazycube refs`), as Zarr v2
(zarr-python) and as Zarr v3 (written by hand) decode to the same dtype and the same values. A variable without _FillValue
masks nothing on any path: `lazycube refs` leaves the Zarr fill_value null when the HDF5 fill
is netCDF's "no fill" zero (a fill_value would mask like _FillValue).

The unpacked dtype is the type of scale_factor/add_offset (src/dataset/cf.cpp): float64 attributes
give float64, float32 attributes float32, whichever path carries them (JSON numbers of kerchunk
and Zarr included). The values are checked against numpy computing x * scale + offset in that
type, with the fill value masked to NaN, and against xarray where it reads the same file.

GRIB has no CF packing attributes: GDAL unpacks GRIB's own packing to float64 itself (see
test_gdal_backend.py), so there is no packed GRIB variable to compare here."""

import json
import subprocess
import warnings

import numpy as np
import pytest

from conftest import import_lazycube

lazycube = import_lazycube()
netCDF4 = pytest.importorskip("netCDF4")
zarr = pytest.importorskip("zarr")

SHAPE = (4, 6, 8)
CHUNKS = (2, 3, 4)
DIMS = ("time", "lat", "lon")
FILL = np.int16(-32767)
# name -> (scale_factor, add_offset or None): attribute types as numpy scalars
VARIABLES = {
    "p64": (np.float64(0.01), np.float64(273.15)),
    "p32": (np.float32(0.01), np.float32(273.15)),
    "s64": (np.float64(0.02), None),
    "s32": (np.float32(0.02), None),
    "n64": (np.float64(0.01), np.float64(273.15)),  # no _FillValue: nothing is masked
}
EXPECTED_DTYPE = {"p64": "float64", "p32": "float32", "s64": "float64", "s32": "float32", "n64": "float64"}
UNFILLED = {"n64"}


def packed_values(k):
    rng = np.random.default_rng(11 + k)
    raw = rng.integers(-30000, 30000, size=SHAPE).astype("i2")
    raw[0, 0, :3] = FILL
    raw[3, 5, 7] = FILL
    raw[1, 2, 3] = 0  # zero is data, not a fill
    return raw


def json_attrs(scale, offset):
    # What kerchunk, xarray's to_zarr and `lazycube refs` write: the attribute's value as a JSON
    # number (a float32 as its exact float64 value).
    attrs = {"scale_factor": float(scale)}
    if offset is not None:
        attrs["add_offset"] = float(offset)
    return attrs


def write_netcdf(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        for d, n in zip(DIMS, SHAPE):
            nc.createDimension(d, n)
        for k, (name, (scale, offset)) in enumerate(VARIABLES.items()):
            v = nc.createVariable(name, "i2", DIMS, zlib=True, shuffle=True, chunksizes=CHUNKS,
                                  fill_value=False if name in UNFILLED else FILL)
            v.set_auto_maskandscale(False)
            v.scale_factor = scale
            if offset is not None:
                v.add_offset = offset
            v[:] = packed_values(k)


def write_zarr_v2(path):
    root = zarr.open_group(str(path), mode="w")
    for k, (name, (scale, offset)) in enumerate(VARIABLES.items()):
        a = root.create_dataset(name, shape=SHAPE, chunks=CHUNKS, dtype="i2",
                                fill_value=None if name in UNFILLED else int(FILL))
        a[:] = packed_values(k)
        a.attrs.update(dict(json_attrs(scale, offset), _ARRAY_DIMENSIONS=list(DIMS)))
    zarr.consolidate_metadata(str(path))


def write_zarr_v3(path):
    """Final-spec Zarr v3 by hand (zarr-python 2.13 cannot write it): bytes codec, no compression.
    In v3 only an explicit _FillValue attribute masks (as in xarray)."""
    path.mkdir()
    (path / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    for k, (name, (scale, offset)) in enumerate(VARIABLES.items()):
        d = path / name
        d.mkdir()
        attrs = json_attrs(scale, offset)
        if name not in UNFILLED:
            attrs["_FillValue"] = int(FILL)
        meta = {"zarr_format": 3, "node_type": "array", "shape": list(SHAPE), "data_type": "int16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(CHUNKS)}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": int(FILL), "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "attributes": attrs, "dimension_names": list(DIMS)}
        (d / "zarr.json").write_text(json.dumps(meta))
        raw = packed_values(k)
        for i in range(SHAPE[0] // CHUNKS[0]):
            for j in range(SHAPE[1] // CHUNKS[1]):
                for m in range(SHAPE[2] // CHUNKS[2]):
                    block = raw[i * CHUNKS[0]:(i + 1) * CHUNKS[0], j * CHUNKS[1]:(j + 1) * CHUNKS[1],
                                m * CHUNKS[2]:(m + 1) * CHUNKS[2]]
                    chunk = d / "c" / str(i) / str(j) / str(m)
                    chunk.parent.mkdir(parents=True, exist_ok=True)
                    chunk.write_bytes(np.ascontiguousarray(block).astype("<i2").tobytes())


@pytest.fixture(scope="module")
def paths(tmp_path_factory, lazycube_cli):
    warnings.simplefilter("ignore")
    base = tmp_path_factory.mktemp("cf_paths")
    nc = base / "packed.nc"
    write_netcdf(nc)
    refs = base / "packed.json"
    subprocess.run([str(lazycube_cli), "refs", str(nc), "-o", str(refs)], check=True, capture_output=True)
    write_zarr_v2(base / "packed.zarr")
    write_zarr_v3(base / "packed_v3.zarr")
    return {"netcdf": nc, "kerchunk": refs, "zarr_v2": base / "packed.zarr", "zarr_v3": base / "packed_v3.zarr"}


def expected(name):
    k = list(VARIABLES).index(name)
    scale, offset = VARIABLES[name]
    t = np.dtype(EXPECTED_DTYPE[name])
    raw = packed_values(k)
    out = raw.astype(t) * t.type(scale)
    if offset is not None:
        out = out + t.type(offset)
    if name not in UNFILLED:
        out[raw == FILL] = np.nan
    return out.astype(t)


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_every_path_decodes_the_same_dtype_and_values(paths, name):
    want = expected(name)
    got = {path: lazycube.open_dataset(str(url))[name] for path, url in paths.items()}
    for path, var in got.items():
        assert str(var.dtype) == EXPECTED_DTYPE[name], path
        values = var.values
        assert values.dtype == want.dtype, path
        np.testing.assert_array_equal(values, want, err_msg=path)
        assert not np.isnan(values[1, 2, 3]), path  # stored 0 is not masked
    # A strided, partial selection goes through the per-chunk region conversion.
    for path, var in got.items():
        part = var.isel({"lat": slice(1, 6, 2), "lon": slice(7, 0, -3)}).values
        np.testing.assert_array_equal(part, want[:, 1:6:2, 7:0:-3], err_msg=path)


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_raw_reads_agree_on_every_path(paths, name):
    raw = packed_values(list(VARIABLES).index(name))
    for path, url in paths.items():
        var = lazycube.open_dataset(str(url), decode_cf=False)[name]
        assert var.dtype == np.dtype("i2"), path
        np.testing.assert_array_equal(var.values, raw, err_msg=path)


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_values_match_xarray(paths, name):
    """xarray 2023.01 (installed here) picks float32 for all four (its older rule ignores the
    attributes' type); its values agree with ours to float32 precision, exactly when ours are
    float32 too (newer xarray, >= 2024.02, gives our dtypes)."""
    xr = pytest.importorskip("xarray")
    warnings.simplefilter("ignore")
    ours = lazycube.open_dataset(str(paths["netcdf"]))[name].values
    for theirs in (xr.open_dataset(paths["netcdf"])[name].values,
                   xr.open_dataset(paths["zarr_v2"], engine="zarr")[name].values):
        np.testing.assert_array_equal(np.isnan(theirs), np.isnan(ours))
        if ours.dtype == theirs.dtype:
            np.testing.assert_array_equal(theirs, ours)
        else:
            # float32 arithmetic on values up to ~600 (ulp 6e-5), rounded twice
            np.testing.assert_allclose(theirs, ours, rtol=0, atol=2.5e-4)


def test_real_packed_netcdf_matches_the_reference_decoding(shared_data):
    """ERA-Interim's packed int16 z/u/v (float64 scale_factor and add_offset): float64 when read
    directly, equal to x * scale + offset in float64 with the fill masked (conftest.redecode_packed
    over xarray's own raw read of the file)."""
    xr = pytest.importorskip("xarray")
    path = shared_data / "real" / "eraint_uvz.nc"
    if not path.is_file():
        pytest.skip("%s not found" % path)
    from conftest import redecode_packed
    warnings.simplefilter("ignore")
    with xr.open_dataset(path) as ds, xr.open_dataset(path, mask_and_scale=False) as raw:
        want = redecode_packed(ds.load(), raw.load())
    got = lazycube.open_dataset(str(path))
    for name in ("z", "u", "v"):
        values = got[name].values
        assert values.dtype == np.float64, name
        np.testing.assert_array_equal(values, want[name].values, err_msg=name)
