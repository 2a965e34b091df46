"""A full disk (issue 21): a small tmpfs fills during `lazycube convert`, the persistent chunk
cache's writes and PredictionWriter's write-back.

Contract (docs/faults.md): the writer fails with a clear error naming the path and the cause
("No space left on device"), never a crash or a hang; nothing is half-visible -- no metadata
(.zarray/.zgroup/.zmetadata/zarr.json) is written when a unit write failed, so no reader sees an
array, and no temporary file of a put is left behind; chunk files already written under their
final names are whole (a later --resume keeps them). The cache never fails a read for want of
space: the bytes are served from the network, no torn entry is published, and a later read with
room gets correct values and hits.

Needs root to mount the tmpfs (CI runs as root); skips with the reason elsewhere.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, import_lazycube, run_cli

xr = pytest.importorskip("xarray")
lazycube = import_lazycube()

sys.path.insert(0, str(REPO / "tests" / "servers"))
import nginx  # noqa: E402
import small_disk  # noqa: E402
from cache_entries import entry_whole  # noqa: E402

VARS = ["a", "b"]
METADATA = {".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json"}
PUT_TEMP_MARK = ".lazycube-tmp-"  # a local put's temporary file (src/store/file_store.cpp)
NOSPACE = "No space left on device"


@pytest.fixture()
def disk(tmp_path):
    """make(size) -> a SmallDisk mounted under tmp_path, unmounted after the test."""
    reason = small_disk.unavailable_reason(tmp_path / "probe")
    if reason:
        pytest.skip("no small tmpfs for the full-disk tests: %s" % reason)
    mounted = []

    def make(size, inodes=None):
        d = small_disk.SmallDisk(tmp_path / ("disk%d" % len(mounted)), size, inodes)
        mounted.append(d)
        return d

    yield make
    for d in mounted:
        d.unmount()


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """2 x 1 MiB of random float32 (incompressible) in a Zarr v2 store, 64 KiB chunks."""
    root = tmp_path_factory.mktemp("src")
    rng = np.random.default_rng(21)
    shape = (16, 128, 128)
    ds = xr.Dataset({v: (("time", "y", "x"), rng.random(shape, dtype=np.float32)) for v in VARS},
                    coords={"time": np.arange(16), "y": np.arange(128), "x": np.arange(128)})
    ds.to_zarr(str(root / "cube.zarr"), encoding={v: {"chunks": (1, 128, 128), "compressor": None}
                                                  for v in VARS}, consolidated=True)
    return root


def files_under(root):
    return [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs]


def metadata_files(root):
    return [f for f in files_under(root) if os.path.basename(f) in METADATA]


def temp_files(root):
    return [f for f in files_under(root) if PUT_TEMP_MARK in f or os.path.basename(f).startswith(".tmp-")]


def assert_same_values(dst, src):
    a, b = lazycube.open_dataset(str(src)), lazycube.open_dataset(str(dst))
    for v in VARS:
        np.testing.assert_array_equal(b[v].values, a[v].values, err_msg=v)


# ---- convert ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["2", "3", "3-sharded"])
def test_convert_fills_the_disk(lazycube_cli, source, disk, fmt):
    d = disk("512k")  # a quarter of the data
    src, dst = source / "cube.zarr", d.path / "out.zarr"
    args = ["convert", src, dst, "--format", fmt[0], "--codec", "none", "--no-progress"]
    if fmt.endswith("sharded"):
        args += ["--chunks", "time=1", "--shards", "time=4"]  # 256 KiB shards of four chunks
    proc = subprocess.run([str(lazycube_cli)] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)  # an error, not a crash
    assert NOSPACE in proc.stderr and str(dst) in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 3, proc.stderr  # one clear message
    # nothing half-visible: no metadata, no temporary file of a put, no array for a reader
    assert metadata_files(dst) == []
    assert temp_files(d.path) == []
    with pytest.raises(lazycube.Error):
        lazycube.open_dataset(str(dst))
    if fmt == "2":
        with pytest.raises(Exception):  # nor for zarr-python
            xr.open_zarr(str(dst))
    # the chunks written are whole: with room, --resume keeps them and finishes the store
    d.resize("16m")
    run_cli(lazycube_cli, *args, "--resume")
    assert_same_values(dst, src)
    assert temp_files(d.path) == []


def test_convert_fills_the_disk_at_the_metadata(lazycube_cli, source, disk, tmp_path):
    """Room for every chunk but not for the metadata written last: still nothing visible."""
    src = source / "cube.zarr"
    args = ["--format", "3", "--codec", "none", "--no-progress"]
    # the pages the whole store takes, and its metadata files (one page each on tmpfs)
    probe = disk("16m")
    run_cli(lazycube_cli, "convert", src, probe.path / "out.zarr", *args)
    used = os.statvfs(probe.path)
    used = (used.f_blocks - used.f_bfree) * used.f_frsize
    n_meta = len(metadata_files(probe.path / "out.zarr"))
    assert n_meta >= 3
    d = disk("16m")
    page = os.statvfs(d.path).f_frsize
    with open(d.path / "filler", "wb") as fh:  # leaves room for everything but the metadata
        fh.write(b"\0" * (d.free() - (used - n_meta * page)))
    dst = d.path / "out.zarr"
    proc = subprocess.run([str(lazycube_cli), "convert", str(src), str(dst)] + args, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert NOSPACE in proc.stderr and str(dst) in proc.stderr, proc.stderr
    assert temp_files(d.path) == []
    # the root group's zarr.json is written after every array's: a reader finds no dataset
    assert not (dst / "zarr.json").exists()
    # an array whose metadata was stored before the disk filled is whole (commit comes after
    # every unit): opened on its own it reads as in the source
    written = [os.path.dirname(f) for f in metadata_files(dst) if os.path.dirname(f)]
    want = lazycube.open_dataset(str(src))
    for name in written:
        np.testing.assert_array_equal(lazycube.open_dataset(str(dst / name))[name].values,
                                      want[name].values, err_msg=name)
    with pytest.raises(lazycube.Error):
        lazycube.open_dataset(str(dst))
    os.remove(d.path / "filler")
    run_cli(lazycube_cli, "convert", src, dst, *args, "--resume")
    assert_same_values(dst, src)


# ---- PredictionWriter ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", [2, 3])
def test_prediction_writer_fills_the_disk(source, disk, fmt):
    template = lazycube.open_dataset(str(source / "cube.zarr"))
    d = disk("256k")
    url = d.path / "pred.zarr"
    gen = lazycube.BatchGenerator(template, {"time": 1, "y": 64, "x": 64}, batch_size=4, variables=["a"])
    with pytest.raises(lazycube.StoreError) as info:
        with lazycube.PredictionWriter(template, str(url), variables={"p": ("time", "y", "x")},
                                       input_dims={"time": 1, "y": 64, "x": 64},
                                       chunks={"time": 1, "y": 64, "x": 64}, codec="none",
                                       format=fmt) as writer:
            for batch in gen.batches():
                writer.write(batch, np.asarray(batch.x) * 2)
    message = str(info.value)
    assert NOSPACE in message and str(url) in message, message
    assert metadata_files(url) == []
    assert temp_files(d.path) == []
    with pytest.raises(lazycube.Error):
        lazycube.open_dataset(str(url))


# ---- the chunk cache -------------------------------------------------------------------------

@pytest.fixture()
def served(source, tmp_path):
    reason = nginx.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with nginx.NginxServer(tmp_path / "nginx", source) as server:
        yield server


def chunk_gets(server):
    """GETs of chunk files (not metadata) nginx has logged."""
    return sum(1 for line in server.prefix.joinpath("logs", "access.log").read_text().splitlines()
               if '"GET ' in line and "/.z" not in line)


def test_cache_on_a_full_disk_reads_from_the_network(source, served, disk):
    d = disk("512k")  # the cache budget (10 GiB by default) is never reached: the disk fills
    cache = d.path / "cache"
    url = served.url + "/cube.zarr"
    want = lazycube.open_dataset(str(source / "cube.zarr"))
    for _ in range(2):
        ds = lazycube.open_dataset(url, cache_dir=str(cache))
        for v in VARS:
            np.testing.assert_array_equal(ds[v].values, want[v].values, err_msg=v)
    assert d.free() < 64 * 1024, "the disk did not fill: %d bytes free" % d.free()
    entries = list(cache.glob("*.lcc"))
    assert entries and all(entry_whole(p) for p in entries)
    assert temp_files(cache) == []
    # with room again the cache fills and serves: a third read fetches no chunk
    d.resize("16m")
    ds = lazycube.open_dataset(url, cache_dir=str(cache))
    for v in VARS:
        np.testing.assert_array_equal(ds[v].values, want[v].values, err_msg=v)
    before = chunk_gets(served)
    ds = lazycube.open_dataset(url, cache_dir=str(cache))
    for v in VARS:
        np.testing.assert_array_equal(ds[v].values, want[v].values, err_msg=v)
    assert chunk_gets(served) == before
    assert all(entry_whole(p) for p in cache.glob("*.lcc"))


def test_convert_with_its_cache_on_a_full_disk(lazycube_cli, source, served, disk, tmp_path):
    """`lazycube convert URL DST --cache-dir FULL`: the conversion succeeds, read from the network."""
    d = disk("256k")
    dst = tmp_path / "out.zarr"
    run_cli(lazycube_cli, "convert", served.url + "/cube.zarr", dst, "--cache-dir", d.path / "cache",
            "--no-progress")
    assert_same_values(dst, source / "cube.zarr")
    assert d.free() < 64 * 1024, "the disk did not fill: %d bytes free" % d.free()
    assert all(entry_whole(p) for p in (d.path / "cache").glob("*.lcc"))
    assert temp_files(d.path) == []


def test_cache_dir_that_a_full_disk_cannot_hold(lazycube_cli, source, served, disk, tmp_path):
    """A cache_dir that cannot be created because the disk is full (no inode left here; a full
    ext4 disk alike) reads without the cache, with a warning; it failed the open before."""
    d = disk("256k", inodes=2)  # the root folder and one file
    (d.path / "last").touch()
    cache = d.path / "cache"
    url = served.url + "/cube.zarr"
    ds = lazycube.open_dataset(url, cache_dir=str(cache))
    want = lazycube.open_dataset(str(source / "cube.zarr"))
    np.testing.assert_array_equal(ds["a"].values, want["a"].values)
    out = tmp_path / "a.npy"
    proc = subprocess.run([str(lazycube_cli), "read", url, "a", "-o", str(out), "--cache-dir", str(cache)],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert "cache_dir '%s' cannot be created: %s" % (cache, NOSPACE) in proc.stderr, proc.stderr
    np.testing.assert_array_equal(np.load(out), want["a"].values)
    assert not cache.exists()


@pytest.mark.parametrize("command", ["read", "stats", "stats-netcdf"])
def test_cli_output_file_fills_the_disk(lazycube_cli, source, disk, command):
    """`lazycube read ... -o OUT.npy`, `lazycube stats ... -o OUT.json` and `--netcdf OUT.nc` onto a
    full disk: the cause and the path in the error, no truncated file left under the name (stats
    exited 0 with an empty JSON file, read left a partial .npy, --netcdf reported nothing and
    crashed at exit in HDF5's exit handler)."""
    d = disk("256k")
    with open(d.path / "filler", "wb") as fh:
        fh.write(b"\0" * d.free())
    src = str(source / "cube.zarr")
    out = d.path / {"read": "a.npy", "stats": "stats.json", "stats-netcdf": "stats.nc"}[command]
    args = {"read": ["read", src, "a", "-o", out], "stats": ["stats", src, "-o", out],
            "stats-netcdf": ["stats", src, "--netcdf", out]}[command]
    proc = subprocess.run([str(lazycube_cli)] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert NOSPACE in proc.stderr and str(out) in proc.stderr, proc.stderr
    assert not out.exists()
