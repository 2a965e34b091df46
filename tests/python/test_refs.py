"""Kerchunk references: `lazycube refs FILE.nc -o refs.json` on NetCDF4 files written by
netCDF4-python (chunked zlib+shuffle, fletcher32, contiguous, compact-free small vars, several
dtypes, big-endian, packed int16 with a fill value, a time coordinate, a dimension without a
coordinate variable), read back through the references with the CLI and the Python package and
compared with netCDF4-python; a hand-written v1 set (templates + gen + inline) read by lazycube
and by zarr-python + fsspec's ReferenceFileSystem; hostile targets refused from Python."""

import base64
import json
import subprocess

import numpy as np
import pytest

from conftest import import_lazycube

netCDF4 = pytest.importorskip("netCDF4")


def cli(exe, *args, check=True):
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, check=check)


def make_nc(path):
    rng = np.random.default_rng(7)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.title = "refs test"
        nc.version = np.int32(3)
        nc.createDimension("time", 6)
        nc.createDimension("lat", 5)
        nc.createDimension("lon", 8)
        nc.createDimension("nv", 2)  # no coordinate variable: a phony dimension dataset
        time = nc.createVariable("time", "f8", ("time",))
        time.units = "hours since 2000-01-01 00:00:00"
        time.calendar = "standard"
        time[:] = np.arange(6) * 6.0
        lat = nc.createVariable("lat", "f4", ("lat",), contiguous=True)
        lat.units = "degrees_north"
        lat[:] = np.linspace(-40, 40, 5)
        lon = nc.createVariable("lon", "f4", ("lon",), chunksizes=(3,))
        lon[:] = np.arange(8) * 45.0
        t2m = nc.createVariable("t2m", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True,
                                complevel=4, chunksizes=(2, 3, 4))
        t2m.units = "K"
        t2m[:] = (280 + 10 * rng.standard_normal((6, 5, 8))).astype("f4")
        packed = nc.createVariable("packed", "i2", ("time", "lat", "lon"), zlib=True, chunksizes=(3, 5, 8),
                                   fill_value=np.int16(-32767))
        packed.scale_factor = np.float32(0.01)
        packed.add_offset = np.float32(280.0)
        values = np.ma.masked_array(280 + 5 * rng.standard_normal((6, 5, 8)))
        values[0, 0, :3] = np.ma.masked
        packed[:] = values
        f64 = nc.createVariable("f64", "f8", ("time", "lat"), zlib=True, fletcher32=True, chunksizes=(4, 2))
        f64[:] = rng.standard_normal((6, 5))
        counts = nc.createVariable("counts", "i4", ("lat", "lon"), contiguous=True)
        counts[:] = np.arange(40, dtype="i4").reshape(5, 8) - 20
        flags = nc.createVariable("flags", "u1", ("lon",))
        flags[:] = np.arange(8, dtype="u1") * 30
        big = nc.createVariable("big", ">f8", ("lat", "lon"), endian="big", chunksizes=(5, 4), shuffle=True, zlib=True)
        big[:] = rng.standard_normal((5, 8))
        bnds = nc.createVariable("lat_bnds", "f4", ("lat", "nv"))
        bnds[:] = np.stack([np.linspace(-45, 35, 5), np.linspace(-35, 45, 5)], axis=1)


VARIABLES = ["time", "lat", "lon", "t2m", "packed", "f64", "counts", "flags", "big", "lat_bnds"]


@pytest.fixture()
def refs(tmp_path, lazycube_cli):
    make_nc(tmp_path / "cube.nc")
    out = cli(lazycube_cli, "refs", tmp_path / "cube.nc", "-o", tmp_path / "refs.json")
    assert out.stderr == ""
    return tmp_path / "refs.json"


def expected(nc_path, name, raw=False):
    with netCDF4.Dataset(nc_path) as nc:
        v = nc[name]
        v.set_auto_maskandscale(not raw)
        data = v[:]
        if np.ma.isMaskedArray(data):
            data = data.astype("f8").filled(np.nan) if data.mask.any() else data.data
        return np.asarray(data)


def test_refs_json_structure(refs):
    doc = json.loads(refs.read_text())
    assert doc["version"] == 1
    r = doc["refs"]
    assert json.loads(r[".zattrs"])["title"] == "refs test"
    t2m = json.loads(r["t2m/.zarray"])
    assert t2m["shape"] == [6, 5, 8] and t2m["chunks"] == [2, 3, 4] and t2m["dtype"] == "<f4"
    assert t2m["compressor"] == {"id": "zlib", "level": 4}
    assert t2m["filters"] == [{"id": "shuffle", "elementsize": 4}]
    assert json.loads(r["t2m/.zattrs"]) == {"units": "K", "_ARRAY_DIMENSIONS": ["time", "lat", "lon"]}
    assert json.loads(r["lat_bnds/.zattrs"])["_ARRAY_DIMENSIONS"] == ["lat", "nv"]
    assert {"id": "fletcher32"} in (json.loads(r["f64/.zarray"])["filters"] or [])
    assert json.loads(r["big/.zarray"])["dtype"] == ">f8"
    assert json.loads(r["packed/.zarray"])["fill_value"] == -32767
    assert "nv/.zarray" not in r  # the phony dimension is no variable
    # 3 x 2 x 2 chunks of t2m, each [relative target, offset, length].
    chunk_keys = [k for k in r if k.startswith("t2m/") and not k.startswith("t2m/.")]
    assert len(chunk_keys) == 12
    target, offset, length = r["t2m/2.1.1"]
    assert target == "cube.nc" and offset > 0 and length > 0
    assert r["lat/0"][0] == "cube.nc"  # contiguous: one chunk


@pytest.mark.parametrize("name", VARIABLES)
def test_cli_read_through_refs_matches_netcdf4(refs, lazycube_cli, tmp_path, name):
    nc_path = tmp_path / "cube.nc"
    cli(lazycube_cli, "read", refs, name, "--raw", "-o", tmp_path / "raw.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "raw.npy"), expected(nc_path, name, raw=True))
    if name != "time":
        cli(lazycube_cli, "read", refs, name, "-o", tmp_path / "decoded.npy")
        np.testing.assert_allclose(np.load(tmp_path / "decoded.npy"), expected(nc_path, name), rtol=1e-6,
                                   equal_nan=True)


def test_direct_read_of_the_netcdf_file_when_supported(refs, lazycube_cli, tmp_path):
    direct = cli(lazycube_cli, "read", tmp_path / "cube.nc", "t2m", "-o", tmp_path / "direct.npy", check=False)
    if direct.returncode != 0:
        pytest.skip("this build cannot read NetCDF files directly (%s)" % direct.stderr.strip())
    cli(lazycube_cli, "read", refs, "t2m", "-o", tmp_path / "via_refs.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "direct.npy"), np.load(tmp_path / "via_refs.npy"))


def test_python_reads_refs(refs, tmp_path):
    lazycube = import_lazycube()
    ds = lazycube.open_dataset(str(refs))
    assert set(VARIABLES) <= set(ds.variables)
    for name in ("t2m", "packed", "f64", "big", "counts"):
        np.testing.assert_allclose(np.asarray(ds[name].read(), dtype="f8"), expected(tmp_path / "cube.nc", name),
                                   rtol=1e-6, equal_nan=True)
    assert ds["time"].read()[1] == np.datetime64("2000-01-01T06:00")
    ds2 = lazycube.open_dataset("reference://" + str(refs))
    np.testing.assert_array_equal(ds2["t2m"].read_raw(), expected(tmp_path / "cube.nc", "t2m", raw=True))


def test_refs_outside_the_output_directory(tmp_path, lazycube_cli):
    lazycube = import_lazycube()
    (tmp_path / "data").mkdir()
    (tmp_path / "refs").mkdir()
    make_nc(tmp_path / "data" / "cube.nc")
    out = cli(lazycube_cli, "refs", tmp_path / "data" / "cube.nc", "-o", tmp_path / "refs" / "r.json")
    assert "allowed_prefixes" in out.stderr
    doc = json.loads((tmp_path / "refs" / "r.json").read_text())
    assert doc["refs"]["t2m/0.0.0"][0] == str(tmp_path / "data" / "cube.nc")
    denied = cli(lazycube_cli, "read", tmp_path / "refs" / "r.json", "t2m", "-o", tmp_path / "x.npy", check=False)
    assert denied.returncode == 1 and "refused" in denied.stderr and "allowed_prefixes" in denied.stderr
    cli(lazycube_cli, "read", tmp_path / "refs" / "r.json", "t2m", "-o", tmp_path / "x.npy",
        "--option", "allowed_prefixes=%s" % (tmp_path / "data"))
    np.testing.assert_allclose(np.load(tmp_path / "x.npy"), expected(tmp_path / "data" / "cube.nc", "t2m"))
    # Python: a list of prefixes works as well as a string.
    ds = lazycube.open_dataset(str(tmp_path / "refs" / "r.json"),
                               storage_options={"allowed_prefixes": ["/nowhere", str(tmp_path / "data")]})
    np.testing.assert_allclose(ds["t2m"].read(), expected(tmp_path / "data" / "cube.nc", "t2m"))
    with pytest.raises(lazycube.StoreError, match="refused"):
        lazycube.open_dataset(str(tmp_path / "refs" / "r.json"))["t2m"].read()


def test_classic_netcdf_is_a_clear_error(tmp_path, lazycube_cli):
    with netCDF4.Dataset(tmp_path / "classic.nc", "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("x", 3)
        nc.createVariable("v", "f4", ("x",))[:] = [1, 2, 3]
    out = cli(lazycube_cli, "refs", tmp_path / "classic.nc", "-o", tmp_path / "c.json", check=False)
    assert out.returncode == 1
    assert "classic netCDF is not supported by refs yet" in out.stderr
    (tmp_path / "text.nc").write_text("hello")
    out = cli(lazycube_cli, "refs", tmp_path / "text.nc", "-o", tmp_path / "t.json", check=False)
    assert out.returncode == 1 and "not a NetCDF4/HDF5 file" in out.stderr


def hand_written_refs(tmp_path):
    """A v1 set: inline metadata, a base64 chunk, template urls, gen-made chunk refs."""
    x = np.arange(24, dtype="<i4").reshape(6, 4) * 3 - 7
    # Row blocks of 2 rows each: block 0 inline, blocks 1 and 2 in part_1.bin / part_2.bin
    # after a 5-byte header (gen: offset 5, length 32).
    for i in (1, 2):
        (tmp_path / ("part_%d.bin" % i)).write_bytes(b"HEADR" + x[2 * i:2 * i + 2].tobytes())
    zarray = {"chunks": [2, 4], "compressor": None, "dtype": "<i4", "fill_value": 0, "filters": None,
              "order": "C", "shape": [6, 4], "zarr_format": 2}
    doc = {
        "version": 1,
        "templates": {"d": str(tmp_path)},
        "refs": {
            ".zgroup": json.dumps({"zarr_format": 2}),
            ".zattrs": json.dumps({"source": "hand"}),
            "x/.zarray": json.dumps(zarray),
            "x/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["r", "c"]}),
            "x/0.0": "base64:" + base64.b64encode(x[0:2].tobytes()).decode(),
        },
        "gen": [{"key": "x/{{i}}.0", "url": "{{d}}/part_{{i}}.bin", "offset": "{{ 5 + 0 * i }}", "length": "32",
                 "dimensions": {"i": {"start": 1, "stop": 3}}}],
    }
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(doc))
    return path, x


def test_hand_written_v1_matches_fsspec_reference_filesystem(tmp_path, lazycube_cli):
    path, x = hand_written_refs(tmp_path)
    cli(lazycube_cli, "read", path, "x", "-o", tmp_path / "x.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), x)
    fsspec = pytest.importorskip("fsspec")
    zarr = pytest.importorskip("zarr")
    try:
        import fsspec.implementations.reference  # noqa: F401
    except ImportError:
        pytest.skip("fsspec has no ReferenceFileSystem")
    mapper = fsspec.get_mapper("reference://", fo=str(path))
    np.testing.assert_array_equal(zarr.open_group(mapper, mode="r")["x"][:], np.load(tmp_path / "x.npy"))


def test_hostile_references_from_python(tmp_path):
    lazycube = import_lazycube()
    path, _ = hand_written_refs(tmp_path)
    doc = json.loads(path.read_text())
    doc["refs"]["x/0.0"] = ["/etc/passwd", 0, 32]
    (tmp_path / "evil.json").write_text(json.dumps(doc))
    with pytest.raises(lazycube.StoreError, match=r"key 'x/0\.0': target '/etc/passwd' refused"):
        lazycube.open_dataset(str(tmp_path / "evil.json"))["x"].read()
    doc["refs"]["x/0.0"] = ["../" + tmp_path.name + "/../../etc/passwd", 0, 32]
    (tmp_path / "evil2.json").write_text(json.dumps(doc))
    with pytest.raises(lazycube.StoreError, match="refused"):
        lazycube.open_dataset(str(tmp_path / "evil2.json"))["x"].read()
    doc["refs"]["x/0.0"] = 17
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(lazycube.MetadataError, match="key 'x/0.0'"):
        lazycube.open_dataset(str(tmp_path / "bad.json"))
