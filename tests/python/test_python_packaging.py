"""Both install paths of the Python package: `cmake --install` (package + dist-info with the
xarray backend entry point) and `pip install --no-build-isolation .` (setuptools' build_ext
driving CMake). Each installs into a temporary folder, then imports lazycube in a fresh
interpreter started in another directory with only that folder added to its path."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, REPO, build_dir, import_lazycube

lazycube = import_lazycube()

CHECK = r"""
import importlib.metadata as md, json, sys
import lazycube
ds = lazycube.open_dataset(sys.argv[1])
eps = md.entry_points(group="xarray.backends")
print(json.dumps({
    "file": lazycube.__file__,
    "core": lazycube._core.__file__,
    "version": lazycube.__version__,
    "dist_version": md.version("lazycube"),
    "entry_points": {ep.name: ep.value for ep in eps},
    "t2m_sum": float(ds["t2m"].isel(time=0).values.sum()),
    "dims": ds.dims,
}))
"""


def exported_symbols(module):
    """The defined dynamic symbols of a built module, as (name, binding) pairs from its .dynsym."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", str(module)], check=True,
                         capture_output=True, text=True).stdout
    symbols = []
    for line in out.splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(f) >= 8 and f[0].endswith(":") and f[0][:-1].isdigit() and f[6] != "UND":
            symbols.append((f[7].split("@")[0], f[4]))
    return symbols


def check_exports_only_entry_point(module):
    """_core exports PyInit__core and nothing else: no symbol of the static layers, no
    GNU-unique symbol (issue 33: with 2,334 exported and 31 unique, the module corrupted the heap
    beside a torch and pyarrow built by another toolchain)."""
    symbols = [s for s in exported_symbols(module) if s[1] != "LOCAL"]
    assert symbols == [("PyInit__core", "GLOBAL")], "%s exports %d symbols: %s" % (
        module, len(symbols), symbols[:20])


def test_built_module_exports_only_its_entry_point():
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) not on PATH")
    check_exports_only_entry_point(lazycube._core.__file__)


def check_installed(site, cwd):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    proc = subprocess.run([sys.executable, "-c", CHECK, str(DATA / "era5_sample_v2.zarr")], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(info["file"]).resolve().is_relative_to(Path(site).resolve())
    assert Path(info["core"]).resolve().is_relative_to(Path(site).resolve())
    assert info["version"] == info["dist_version"] == lazycube.__version__
    assert info["entry_points"].get("lazycube") == "lazycube.xarray_backend:LazycubeBackendEntrypoint"
    assert info["dims"] == {"time": 96, "latitude": 61, "longitude": 81}
    expected = float(lazycube.open_dataset(DATA / "era5_sample_v2.zarr")["t2m"].isel(time=0).values.sum())
    assert info["t2m_sum"] == expected
    if shutil.which("readelf") is not None:
        check_exports_only_entry_point(info["core"])
    return info


def _build():
    b = build_dir()
    if not (b / "CMakeCache.txt").is_file():
        pytest.skip("no configured CMake build folder at %s (set LAZYCUBE_BUILD_DIR)" % b)
    return b


def test_cmake_install(tmp_path):
    b = _build()
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(b), "--prefix", str(prefix), "--component", "python"],
                   check=True, capture_output=True, text=True, timeout=300)
    inits = list(prefix.glob("lib/python3*/dist-packages/lazycube/__init__.py"))
    assert len(inits) == 1, list(prefix.rglob("*"))
    site = inits[0].parent.parent
    dist = list(site.glob("lazycube-*.dist-info"))
    assert len(dist) == 1
    assert (dist[0] / "METADATA").read_text().startswith("Metadata-Version:")
    assert "[xarray.backends]" in (dist[0] / "entry_points.txt").read_text()
    assert list((site / "lazycube").glob("_core*.so"))
    check_installed(site, cwd=tmp_path)


def test_pip_install(tmp_path):
    """pip builds the wheel with setuptools; build_ext builds `_core` in the existing CMake build
    folder (LAZYCUBE_CMAKE_BUILD_DIR) so the test does not compile the library a second time."""
    if shutil.which("cmake") is None:
        pytest.skip("cmake not on PATH")
    proc = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail("pip is not available for %s (Debian: python3-pip)" % sys.executable)
    b = _build()
    src = tmp_path / "src"
    # A copy of the sources (pip builds in-tree; keep the checkout clean).
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", "build", "build-*", "_install", "__pycache__", "*.egg-info", "data", ".whl", ".gl"))
    prefix = tmp_path / "prefix"
    env = dict(os.environ, LAZYCUBE_CMAKE_BUILD_DIR=str(b), PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    # --prefix (unlike --target) resolves the numpy dependency against the installed Debian
    # packages, as a plain `pip install --no-build-isolation .` does.
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                           "--prefix", str(prefix), str(src)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    inits = list(prefix.rglob("lazycube/__init__.py"))
    assert len(inits) == 1, proc.stdout
    site = inits[0].parent.parent
    assert list(site.glob("lazycube-*.dist-info"))
    assert list((site / "lazycube").glob("_core*.so"))
    check_installed(site, cwd=tmp_path)
