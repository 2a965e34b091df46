"""Issue 16: stdout carries only the command's result. GDAL's diagnostics (GRIB's degrib prints
"Warning: Inside GRIB2Inventory ... ERROR: Ran out of file reading SECT0" with printf) are
reported on stderr as "lazycube: warning: ..." or under "warnings" in --json; `--version`; the
progress bar of `read` and `bench` (stderr, only on a terminal unless --progress)."""
import json
import os
import pty
import re
import select
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, REPO, run_cli

SUFFIXES = (".grib", ".grib2", ".grb", ".grb2", ".nc", ".nc4")
WARNING_PREFIX = "lazycube: warning: "
BAR = re.compile(r"\r\[[#.]{30}\] [0-9.]+/[0-9.]+ (MB|batches)")


def real_files():
    env = os.environ.get("LAZYCUBE_SHARED_DATA")
    folder = (Path(env) if env else REPO.parent / "shared" / "data") / "real"
    files = sorted(p for p in folder.glob("*") if p.suffix.lower() in SUFFIXES) if folder.is_dir() else []
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason="no GRIB/NetCDF files in %s (shared data absent; set LAZYCUBE_SHARED_DATA)" % folder))]
    return [pytest.param(p, id=p.name) for p in files]


def osgeo_gdal():
    try:
        from osgeo import gdal
    except ImportError:
        pytest.skip("the osgeo (GDAL) Python bindings are not installed for %s" % "/usr/bin/python3")
    gdal.UseExceptions()
    return gdal


def gdal_multidim_arrays(path):
    """name -> values of every array of the root group, read by GDAL's own Python bindings (the
    same multidimensional API the gdal engine uses, without lazycube)."""
    gdal = osgeo_gdal()
    gdal.PushErrorHandler("CPLQuietErrorHandler")
    try:
        ds = gdal.OpenEx(str(path), gdal.OF_MULTIDIM_RASTER)
        root = ds.GetRootGroup()
        return {name: root.OpenMDArray(name).ReadAsArray() for name in root.GetMDArrayNames()}
    finally:
        gdal.PopErrorHandler()


def warnings_of(stderr):
    lines = stderr.splitlines()
    assert all(line.startswith(WARNING_PREFIX) for line in lines), stderr
    return [line[len(WARNING_PREFIX):] for line in lines]


@pytest.mark.parametrize("path", real_files())
def test_info_json_is_json_and_warnings_are_under_warnings(lazycube_cli, path):
    p = run_cli(lazycube_cli, "info", path, "--json")
    info = json.loads(p.stdout)  # nothing else on stdout
    assert info["variables"] and info["dims"]
    assert p.stderr == ""  # with --json the warnings are in the JSON
    warnings = info.get("warnings", [])
    assert isinstance(warnings, list) and all(isinstance(w, str) and w for w in warnings)
    assert "warnings" not in info or warnings  # the key only when there is something to say
    if path.suffix.lower().startswith((".grib", ".grb")):
        # This file's 18-byte padding after the last message makes degrib complain: a warning,
        # not an error, and never on stdout.
        assert any("Ran out of file reading SECT0" in w for w in warnings), warnings
    text = run_cli(lazycube_cli, "info", path)
    assert text.stdout.startswith("<lazycube.Dataset>")
    assert "GRIB2Inventory" not in text.stdout and "SECT0" not in text.stdout
    assert warnings_of(text.stderr) == warnings


@pytest.mark.parametrize("path", real_files())
def test_read_equals_gdal_and_stdout_stays_empty(lazycube_cli, path, tmp_path):
    reference = gdal_multidim_arrays(path)
    assert reference
    for name, expected in reference.items():
        out = tmp_path / ("%s.npy" % name.replace("/", "_"))
        p = run_cli(lazycube_cli, "read", path, name, "--raw", "-o", out)
        assert p.stdout == ""
        warnings_of(p.stderr)
        got = np.load(out)
        assert got.shape == expected.shape, name
        np.testing.assert_array_equal(got, expected, err_msg=name)


@pytest.mark.parametrize("path", [p for p in real_files() if p.values[0] is None or p.values[0].suffix == ".nc"])
def test_read_decoded_equals_netcdf4_python(lazycube_cli, path, tmp_path):
    netCDF4 = pytest.importorskip("netCDF4")
    with netCDF4.Dataset(str(path)) as ds:
        names = [n for n, v in ds.variables.items() if v.dimensions]
        for name in names:
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "_FillValue not used since it cannot be safely cast"
                expected = np.ma.filled(ds[name][:], np.nan)
            out = tmp_path / ("%s.npy" % name)
            p = run_cli(lazycube_cli, "read", path, name, "-o", out)
            assert p.stdout == ""
            np.testing.assert_allclose(np.load(out), expected, rtol=1e-12, atol=0, err_msg=name)


def test_version_is_the_project_version(lazycube_cli):
    p = run_cli(lazycube_cli, "--version")
    cmake = (REPO / "CMakeLists.txt").read_text()
    version = re.search(r"project\(lazycube VERSION ([0-9.]+)", cmake).group(1)
    assert p.stdout == "lazycube %s\n" % version and p.stderr == ""
    try:
        from lazycube import _core
    except ImportError:
        return  # the Python package is not built: the CMake version is the reference
    assert _core.__version__ == version


def run_on_pty(cli, *args, timeout=120):
    """Runs `lazycube ARGS` with stderr on a pseudo-terminal (stdout a pipe); returns
    (returncode, stdout, everything written to the terminal, seconds)."""
    master, slave = pty.openpty()
    start = time.monotonic()
    proc = subprocess.Popen([str(cli)] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks = []
    deadline = start + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    out = proc.stdout.read()
    proc.wait(timeout=10)
    seconds = time.monotonic() - start
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode(), seconds


SAMPLE = DATA / "era5_sample_v3.zarr"
BENCH_ARGS = ["--variables", "t2m,u10,v10", "--input-dims", "time=1,latitude=8,longitude=8", "--shuffle",
              "random", "--cache-mb", "0", "--batch-size", "32"]


def test_bench_on_a_terminal_shows_a_bar_after_a_second(lazycube_cli):
    # Uncached random windows: a few seconds on the CI machine.
    rc, out, tty, seconds = run_on_pty(lazycube_cli, "bench", SAMPLE, *BENCH_ARGS, "--epochs", "2",
                                       "--max-batches", "400")
    assert rc == 0, tty
    assert "throughput" in out.decode()
    if seconds < 1.5:
        pytest.skip("the bench ran %.2f s here: too quick to check the bar shown after a second" % seconds)
    assert BAR.search(tty), repr(tty[-300:])
    assert "/400 batches" in tty
    assert tty.endswith("\r\x1b[K")  # erased before the result is printed


def test_quick_bench_on_a_terminal_draws_nothing(lazycube_cli):
    rc, out, tty, seconds = run_on_pty(lazycube_cli, "bench", SAMPLE, *BENCH_ARGS, "--max-batches", "3")
    assert rc == 0 and "throughput" in out.decode()
    if seconds >= 1.0:
        pytest.skip("3 batches took %.2f s here: no quick run to check" % seconds)
    assert tty == ""


def test_no_progress_on_a_terminal_draws_nothing(lazycube_cli, tmp_path):
    rc, _, tty, _ = run_on_pty(lazycube_cli, "bench", SAMPLE, *BENCH_ARGS, "--max-batches", "200",
                               "--no-progress")
    assert rc == 0 and tty == ""
    rc, _, tty, _ = run_on_pty(lazycube_cli, "read", SAMPLE, "t2m", "--no-progress", "-o", tmp_path / "a.npy")
    assert rc == 0 and tty == ""


def run_bytes(cli, *args):
    """run_cli without newline translation (the bar's carriage returns stay "\\r")."""
    p = subprocess.run([str(cli)] + [str(a) for a in args], capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    return subprocess.CompletedProcess(p.args, 0, p.stdout.decode(), p.stderr.decode())


def test_progress_forces_the_bar_and_read_values_are_the_same(lazycube_cli, tmp_path):
    plain, barred = tmp_path / "plain.npy", tmp_path / "barred.npy"
    isel = ["--isel", "time=3:90:2", "--isel", "latitude=5:50"]
    p = run_cli(lazycube_cli, "read", SAMPLE, "t2m", *isel, "-o", plain)
    assert p.stderr == ""  # not a terminal: no bar
    # --progress draws even on a pipe, from the start; the read goes slab by slab.
    p = run_bytes(lazycube_cli, "read", SAMPLE, "t2m", *isel, "--progress", "-o", barred)
    assert BAR.search(p.stderr) and p.stderr.endswith("\r\x1b[K"), repr(p.stderr)
    assert p.stdout == ""
    np.testing.assert_array_equal(np.load(barred), np.load(plain))
    assert np.load(plain).shape == (44, 45, 81)
    p = run_bytes(lazycube_cli, "bench", SAMPLE, *BENCH_ARGS, "--max-batches", "3", "--progress", "--json")
    assert "/3 batches" in p.stderr and json.loads(p.stdout)["batches"] == 3


def test_progress_and_no_progress_exclude_each_other(lazycube_cli, tmp_path):
    p = subprocess.run([str(lazycube_cli), "read", str(SAMPLE), "t2m", "--progress", "--no-progress", "-o",
                        str(tmp_path / "x.npy")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "" and "--no-progress" in p.stderr


@pytest.mark.parametrize("path", [p for p in real_files() if p.values[0] is None or ".gr" in p.values[0].suffix])
def test_bench_json_carries_the_grib_warning(lazycube_cli, path):
    info = json.loads(run_cli(lazycube_cli, "info", path, "--json").stdout)
    variable = next(n for n, v in info["variables"].items() if len(v["dims"]) == 3)
    time_dim = info["variables"][variable]["dims"][0]
    p = run_cli(lazycube_cli, "bench", path, "--variables", variable, "--input-dims", "%s=24" % time_dim,
                "--max-batches", "2", "--json")
    lines = p.stdout.splitlines()
    assert len(lines) == 1 and p.stderr == ""
    result = json.loads(lines[0])
    assert result["batches"] >= 1
    assert any("Ran out of file reading SECT0" in w for w in result["warnings"]), result.get("warnings")
