"""Shared pytest fixtures for lazycube's Python-side tests.

Run with Debian's interpreter (it has numpy, zarr-python 2.13, numcodecs, xarray):

    /usr/bin/python3 -m pytest -q -rs tests/python

Environment:
  LAZYCUBE_CLI             the `lazycube` executable (default: build/lazycube in the repository)
  LAZYCUBE_SHARED_DATA     the shared data folder (default: ../shared/data beside the repository)
  LAZYCUBE_PYTHON_PACKAGE  the built `lazycube` package folder (ctest sets it, with PYTHONPATH, to
                           <build>/python/lazycube); then `import lazycube` must work. Unset: the
                           package staged in build/python is used when it is there, and tests of
                           the Python package skip visibly when it is not built.
  LAZYCUBE_BUILD_DIR       the CMake build folder (ctest sets it; default: build/)
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
DATA = REPO / "data"

if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))


def _staged_package_root():
    env = os.environ.get("LAZYCUBE_PYTHON_PACKAGE")
    if env:
        return Path(env).parent
    if os.environ.get("LAZYCUBE_BUILD_DIR"):
        # ctest of a build without the module (e.g. the sanitizer build): do not pick up
        # another build's package.
        return None
    staged = REPO / "build" / "python"
    if any((staged / "lazycube").glob("_core*.so")):
        return staged
    return None


_PKG_ROOT = _staged_package_root()
if _PKG_ROOT is not None and str(_PKG_ROOT) not in sys.path:
    sys.path.insert(0, str(_PKG_ROOT))


def import_lazycube():
    """Imports the built lazycube package, for test modules:

        from conftest import import_lazycube
        lazycube = import_lazycube()

    Skips the whole module (reason shown under -rs) when the package is not built; fails when
    LAZYCUBE_PYTHON_PACKAGE names it (ctest does) and it does not import."""
    try:
        import lazycube
        from lazycube import _core  # noqa: F401
    except ImportError as exc:
        if os.environ.get("LAZYCUBE_PYTHON_PACKAGE"):
            raise
        pytest.skip("the lazycube Python package is not built (%s); build the _core target or "
                    "set LAZYCUBE_PYTHON_PACKAGE" % exc, allow_module_level=True)
    return lazycube


def build_dir():
    """The CMake build folder (LAZYCUBE_BUILD_DIR, default build/)."""
    env = os.environ.get("LAZYCUBE_BUILD_DIR")
    return Path(env) if env else REPO / "build"


def _cli_path():
    env = os.environ.get("LAZYCUBE_CLI")
    return Path(env) if env else REPO / "build" / "lazycube"


def pytest_collection_modifyitems(config, items):
    """LAZYCUBE_PYTEST_CLI_ONLY=1 (the sanitizer builds' ctest entry): only the tests that run
    the CLI (the `lazycube_cli` fixture), the instrumented code pytest reaches there."""
    if os.environ.get("LAZYCUBE_PYTEST_CLI_ONLY") != "1":
        return
    keep = [item for item in items if "lazycube_cli" in getattr(item, "fixturenames", ())]
    dropped = [item for item in items if "lazycube_cli" not in getattr(item, "fixturenames", ())]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


@pytest.fixture(scope="session")
def repo_root():
    return REPO


@pytest.fixture(scope="session")
def sample_dir():
    """The bundled sample folder (data/ in the repository)."""
    return DATA


@pytest.fixture(scope="module")
def era5(sample_dir):
    """The bundled Zarr v2 ERA5-like sample, as a path string."""
    path = sample_dir / "era5_sample_v2.zarr"
    if not path.is_dir():
        pytest.skip("bundled sample missing: %s" % path)
    return str(path)


@pytest.fixture(scope="session")
def lazycube_cli():
    """Path to the lazycube CLI; skips (reason shown under -rs) when the default build/lazycube
    is not built, fails when LAZYCUBE_CLI names a missing file."""
    cli = _cli_path()
    if not (cli.is_file() and os.access(cli, os.X_OK)):
        if os.environ.get("LAZYCUBE_CLI"):
            # Named explicitly (ctest does): a missing binary is a failure, not a skip.
            pytest.fail("LAZYCUBE_CLI=%s is not an executable file" % cli)
        pytest.skip("lazycube CLI not found at %s (build it, or set LAZYCUBE_CLI)" % cli)
    return cli


@pytest.fixture(scope="session")
def shared_data():
    """The shared data folder (zarr-fixtures/, real/); skips visibly when it is absent."""
    env = os.environ.get("LAZYCUBE_SHARED_DATA")
    path = Path(env) if env else REPO.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip("shared data not found at %s (set LAZYCUBE_SHARED_DATA)" % path)
    return path


@pytest.fixture(scope="module")
def no_aws_environment(tmp_path_factory):
    """No AWS_* variable (nor a ~/.aws) for this process and the workers it starts: S3
    credentials come from storage_options only."""
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith("AWS_"):
                mp.delenv(name)
        mp.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        yield


class CliError(AssertionError):
    """The CLI exited non-zero; the message carries the command and its stderr."""


def run_cli(cli, *args, timeout=120):
    """Runs `lazycube ARGS...`; returns the CompletedProcess, raising CliError on failure."""
    cmd = [str(cli)] + [str(a) for a in args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise CliError("%s exited %d\nstdout:\n%s\nstderr:\n%s"
                       % (" ".join(cmd), proc.returncode, proc.stdout, proc.stderr))
    return proc


def read_npy(cli, url, tmp_path, variable=None, isel=(), raw=False, name="out.npy"):
    """`lazycube read URL [VARIABLE] [--isel D=A:B ...] [--raw] -o OUT.npy`, then np.load(OUT).

    `isel` is a sequence of strings like "time=0:24" or "latitude=0:40:2"."""
    out = Path(tmp_path) / name
    args = ["read", url]
    if variable is not None:
        args.append(variable)
    for sel in isel:
        args += ["--isel", sel]
    if raw:
        args.append("--raw")
    args += ["-o", out]
    run_cli(cli, *args)
    return np.load(out, allow_pickle=False)


@pytest.fixture
def cli_read(lazycube_cli, tmp_path):
    """Fixture form of read_npy bound to the CLI and a per-test temp dir:
    cli_read(url, variable=None, isel=(), raw=False) -> numpy array."""
    counter = iter(range(1_000_000))

    def _read(url, variable=None, isel=(), raw=False):
        return read_npy(lazycube_cli, url, tmp_path, variable=variable, isel=isel, raw=raw,
                        name="out%d.npy" % next(counter))

    return _read


# ---------------------------------------------------------------- CF reference for packed data

def _attribute_float_type(value):
    """The float type a CF number attribute carries (src/dataset/cf.cpp): float32 for numpy
    float32 scalars and for JSON numbers that are exactly a float32 and spell shorter as one
    (0.009999999776482582 is float32(0.01)); float64 otherwise."""
    if isinstance(value, (list, tuple, np.ndarray)):
        value = np.ravel(value)[0]
    if isinstance(value, np.floating):
        return np.dtype(value.dtype)
    if isinstance(value, float) and np.isfinite(value) and float(np.float32(value)) == value \
            and len(repr(np.float32(value))) < len(repr(value)):
        return np.dtype("f4")
    return np.dtype("f8")


def cf_unpacked_dtype(stored, attrs):
    """The dtype a packed variable decodes to: xarray >= 2024.02's _choose_float_dtype given the
    attributes (xarray 2023.01, installed here, decides from the stored dtype alone)."""
    stored = np.dtype(stored)
    scale, offset = attrs.get("scale_factor"), attrs.get("add_offset")
    if scale is not None and offset is not None and _attribute_float_type(scale) == _attribute_float_type(offset):
        return np.dtype("f8") if stored.kind in "iu" and stored.itemsize == 4 else _attribute_float_type(scale)
    if offset is not None:
        return np.dtype("f8")
    return _attribute_float_type(scale)


def redecode_packed(ds, raw):
    """`ds` (decoded by the installed xarray) with every packed variable decoded again from `raw`
    (the same data opened with mask_and_scale=False) by the rule lazycube and xarray >= 2024.02
    follow: the unpacked type of the attributes, x * scale + offset in it, fills -> NaN."""
    ds = ds.copy()
    for name, var in raw.variables.items():
        attrs = var.attrs
        if "scale_factor" not in attrs and "add_offset" not in attrs:
            continue
        t = cf_unpacked_dtype(var.dtype, attrs)
        values = np.asarray(var.values)
        out = values.astype(t)
        if "scale_factor" in attrs:
            out = out * t.type(np.ravel(attrs["scale_factor"])[0])
        if "add_offset" in attrs:
            out = out + t.type(np.ravel(attrs["add_offset"])[0])
        for key in ("_FillValue", "missing_value"):
            if attrs.get(key) is not None:
                for fill in np.ravel(attrs[key]):
                    out[values == fill] = np.nan
        ds[name] = ds[name].copy(data=out.astype(t))
    return ds


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(script, nproc, *args, timeout=300, pythonpath=()):
    """Runs tests/python/`script` (a path) as `nproc` ranks of one node under PyTorch's own
    launcher (gloo over loopback), with the lazycube package this test run imports on the
    workers' PYTHONPATH (and `pythonpath`); fails the test with its output unless it exits 0.
    Debian's torch 1.13 torchrun needs non-zero --redirects on Python 3.11 (ENVIRONMENT.md)."""
    lazycube = import_lazycube()
    env = dict(os.environ)
    pkg = str(Path(lazycube.__file__).resolve().parents[1])  # the staged package dir
    env["PYTHONPATH"] = os.pathsep.join([pkg] + [str(p) for p in pythonpath]
                                        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["OMP_NUM_THREADS"] = "1"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=%d" % nproc, "--nnodes=1",
           "--master_addr=127.0.0.1", "--master_port=%d" % _free_port(), "--redirects", "9:1",
           "--tee", "9:1", "--monitor_interval", "0.2", str(script)] + [str(a) for a in args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, "torchrun failed (%d)\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr)
    return proc


def write_v3_array(root, name, data_type, shape, chunk, codecs, chunks, fill_value=0):
    """A Zarr v3 array `name` written by hand in the group `root` (created), its chunks given as
    {(i, ...): bytes} under the default "/" key encoding; returns its folder."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    arr = root / name
    arr.mkdir()
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunk)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value, "codecs": codecs, "attributes": {},
        "dimension_names": ["d%d" % i for i in range(len(shape))],
    }
    (arr / "zarr.json").write_text(json.dumps(meta))
    for index, data in chunks.items():
        path = arr.joinpath("c", *[str(i) for i in index])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return arr
