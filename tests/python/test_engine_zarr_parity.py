"""engine="lazycube" as xarray's zarr engine (issue 48, item 8), on stores the tests write with
xarray: ``chunk_store=`` (the chunks in another store), a variable named None (stored as
``__values__``) read back as None, and the UserWarnings xarray gives for CF references
(bounds, grid_mapping, ...) naming variables the dataset lacks -- value for value, dtype for
dtype, warnings included. (The dtype rule of packed variables: test_engine_fidelity.py.)"""
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

from conftest import import_lazycube  # noqa: E402

import_lazycube()


def _dataset():
    return xr.Dataset({"t": (("y", "x"), np.arange(12.0).reshape(3, 4)), "n": ("x", np.arange(4, dtype="i2"))},
                      coords={"x": np.arange(4) * 10, "y": [1, 2, 3]}, attrs={"title": "t"})


def _split(path, chunks):
    """Moves every chunk of the Zarr v2 store at `path` to the same key under `chunks`."""
    for f in sorted(Path(path).rglob("*")):
        if f.is_file() and not f.name.startswith("."):
            dest = Path(chunks) / f.relative_to(path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(f), dest)


def _quiet_open(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(*args, **kwargs).load()


def test_chunk_store_as_the_zarr_engine(tmp_path):
    meta, chunks = tmp_path / "meta.zarr", tmp_path / "chunks"
    _dataset().to_zarr(meta, consolidated=False)
    _split(meta, chunks)
    want = _quiet_open(str(meta), engine="zarr", chunk_store=str(chunks), consolidated=False)
    got = _quiet_open(str(meta), engine="lazycube", chunk_store=str(chunks), consolidated=False)
    xr.testing.assert_identical(got, want)
    np.testing.assert_array_equal(got["t"].values, _dataset()["t"].values)
    # Without it, the chunks are absent: the float variable reads as its fill value (NaN) in
    # both engines (zarr-python leaves integers without a fill value uninitialised).
    alone = _quiet_open(str(meta), engine="lazycube", consolidated=False)
    assert np.isnan(alone["t"].values).all()
    assert np.isnan(_quiet_open(str(meta), engine="zarr", consolidated=False)["t"].values).all()
    with pytest.raises(TypeError, match="chunk_store"):
        xr.open_dataset(str(meta), engine="lazycube", chunk_store={})


def test_variable_named_none_round_trips(tmp_path):
    path = str(tmp_path / "none.zarr")
    xr.Dataset({None: ("x", np.arange(3.0))}).to_zarr(path, consolidated=False)
    want = _quiet_open(path, engine="zarr", consolidated=False)
    got = _quiet_open(path, engine="lazycube", consolidated=False)
    assert list(got.variables) == list(want.variables) == [None]
    xr.testing.assert_identical(got, want)


def _warnings_of(path, engine, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = xr.open_dataset(path, engine=engine, consolidated=False, **kwargs)
    return ds, sorted((w.category.__name__, str(w.message)) for w in caught if issubclass(w.category, UserWarning))


@pytest.mark.parametrize("decode_coords", ["all", True])
def test_unresolved_cf_references_warn_as_the_zarr_engine(tmp_path, decode_coords):
    """A DataArray written alone keeps attributes naming coordinates it no longer carries
    (bounds, grid_mapping); the zarr engine warns under decode_coords="all", and so does
    engine="lazycube", with the same words."""
    da = xr.DataArray(np.arange(4.0), dims="x", coords={"x": np.arange(4.0)}, name="v",
                      attrs={"grid_mapping": "crs"})
    da["x"].attrs["bounds"] = "x_bnds"
    da.attrs["cell_measures"] = "area: cell_area extra"  # odd number of words: malformed
    path = str(tmp_path / "da.zarr")
    da.to_dataset().to_zarr(path, consolidated=False)
    want, want_warnings = _warnings_of(path, "zarr", decode_coords=decode_coords)
    got, got_warnings = _warnings_of(path, "lazycube", decode_coords=decode_coords)
    assert got_warnings == want_warnings
    if decode_coords == "all":
        assert any("referenced in grid_mapping not in variables: ['crs']" in m for _, m in got_warnings)
    xr.testing.assert_identical(got.load(), want.load())
