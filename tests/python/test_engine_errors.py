"""Errors and warnings in xarray's words (issue 31): a missing store is xarray's
FileNotFoundError text (also a lazycube.NotFoundError), and falling back from absent consolidated
metadata warns with xarray's RuntimeWarning -- only where xarray's zarr engine warns."""
import json
import os
import shutil
import warnings

import numpy as np
import pytest

from conftest import import_lazycube

lazycube = import_lazycube()
xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")


def _zarr_engine_error(path, **kwargs):
    with pytest.raises(FileNotFoundError) as info:
        xr.open_dataset(path, engine="zarr", **kwargs)
    return str(info.value)


def _warnings_of(open_):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        open_()
    return [w for w in caught if issubclass(w.category, RuntimeWarning)]


# ---- a missing store ------------------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["absolute", "relative", "trailing slash", "dotted"])
def test_missing_store_is_xarrays_file_not_found(tmp_path, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    path = {"absolute": str(tmp_path / "missing.zarr"),
            "relative": "missing.zarr",
            "trailing slash": "missing.zarr/",
            "dotted": "sub/../missing.zarr"}[spelling]
    want = _zarr_engine_error(path)
    assert want == "No such file or directory: '%s'" % (tmp_path / "missing.zarr")
    for open_ in (lambda: xr.open_dataset(path, engine="lazycube"),
                  lambda: lazycube.open_dataset(path)):
        with pytest.raises(FileNotFoundError) as info:
            open_()
        assert str(info.value) == want
        assert isinstance(info.value, lazycube.NotFoundError)
        assert isinstance(info.value, KeyError)  # lazycube.NotFoundError stays one


def test_missing_store_with_pathlib_and_options(tmp_path):
    path = tmp_path / "nothing" / "here.zarr"
    want = _zarr_engine_error(path)
    for kwargs in ({}, {"consolidated": False}, {"consolidated": True}, {"decode_cf": False}):
        with pytest.raises(lazycube.NotFoundError, match="^No such file or directory: '%s'$" % path):
            xr.open_dataset(path, engine="lazycube", **kwargs)
    with pytest.raises(FileNotFoundError) as info:
        lazycube.open_dataset(path)
    assert str(info.value) == want


def test_other_not_found_errors_keep_naming_what_is_missing(tmp_path):
    # An existing directory that holds no Zarr node, a missing group: lazycube's own words
    # (they name what is missing), still FileNotFoundError as xarray raises.
    empty = tmp_path / "empty.zarr"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no Zarr group or array at .*empty.zarr"):
        xr.open_dataset(empty, engine="lazycube")
    xr.Dataset({"a": ("x", np.arange(3.0))}).to_zarr(tmp_path / "s.zarr")
    with pytest.raises(lazycube.NotFoundError, match="nogroup"):
        xr.open_dataset(tmp_path / "s.zarr", engine="lazycube", group="nogroup")


# ---- the consolidated-metadata fallback warning ---------------------------------------------

@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("consolidated")
    ds = xr.Dataset({"a": (("x", "y"), np.arange(12.0).reshape(3, 4))}, coords={"x": [1, 2, 3]})
    ds.to_zarr(root / "plain.zarr", consolidated=False)
    ds.to_zarr(root / "consolidated.zarr", consolidated=True)
    # A group inside a store consolidated at its root, and inside one that is not.
    ds.to_zarr(root / "grouped.zarr", group="g", consolidated=True)
    ds.to_zarr(root / "grouped_plain.zarr", group="g", consolidated=False)
    return root


def _xarray_fallback_warning(path, **kwargs):
    caught = _warnings_of(lambda: xr.open_dataset(path, engine="zarr", **kwargs))
    return [str(w.message) for w in caught]


def test_fallback_warns_as_xarray(stores):
    path = str(stores / "plain.zarr")
    want = _xarray_fallback_warning(path)
    assert len(want) == 1 and want[0].startswith("Failed to open Zarr store with consolidated")
    caught = _warnings_of(lambda: xr.open_dataset(path, engine="lazycube"))
    assert [str(w.message) for w in caught] == want
    assert caught[0].filename == __file__  # points at the caller of open_dataset, as xarray's
    xr.testing.assert_identical(xr.open_dataset(path, engine="lazycube", consolidated=False),
                                xr.open_dataset(path, engine="zarr", consolidated=False))


def test_fallback_warns_for_a_group_as_xarray(stores):
    for name, warns in (("grouped.zarr", False), ("grouped_plain.zarr", True)):
        path = str(stores / name)
        want = _xarray_fallback_warning(path, group="g")
        assert bool(want) == warns, name
        got = [str(w.message) for w in
               _warnings_of(lambda: xr.open_dataset(path, engine="lazycube", group="g"))]
        assert got == want, name


@pytest.mark.parametrize("name, kwargs", [
    ("plain.zarr", {"consolidated": False}),
    ("consolidated.zarr", {}),
    ("consolidated.zarr", {"consolidated": True}),
    ("consolidated.zarr", {"consolidated": False}),
])
def test_no_warning_where_xarray_gives_none(stores, name, kwargs):
    path = str(stores / name)
    assert _xarray_fallback_warning(path, **kwargs) == []
    assert _warnings_of(lambda: xr.open_dataset(path, engine="lazycube", **kwargs)) == []


def test_consolidated_true_without_zmetadata_is_an_error(stores):
    with pytest.raises(lazycube.NotFoundError, match=r"\.zmetadata"):
        xr.open_dataset(stores / "plain.zarr", engine="lazycube", consolidated=True)


def test_no_warning_for_zarr_v3_nor_icechunk(sample_dir, shared_data, tmp_path):
    v3 = sample_dir / "era5_sample_v3.zarr"
    if not v3.is_dir():
        pytest.skip("bundled sample missing: %s" % v3)
    assert _warnings_of(lambda: xr.open_dataset(v3, engine="lazycube")) == []
    # Zarr v3 without its consolidated_metadata block: xarray never warns for v3 either.
    plain = tmp_path / "plain_v3.zarr"
    shutil.copytree(v3, plain)
    meta = json.loads((plain / "zarr.json").read_text())
    assert meta.pop("consolidated_metadata", None) is not None
    (plain / "zarr.json").write_text(json.dumps(meta))
    assert _warnings_of(lambda: xr.open_dataset(plain, engine="lazycube")) == []
    xr.testing.assert_identical(xr.open_dataset(plain, engine="lazycube"),
                                xr.open_dataset(v3, engine="lazycube"))
    repo = shared_data / "icechunk-fixtures" / "test-repo-v2"
    if not repo.is_dir():
        pytest.skip("no Icechunk fixture at %s" % repo)
    assert _warnings_of(lambda: xr.open_dataset(repo, engine="lazycube",
                                                group="group1/small_chunks")) == []


def test_native_api_does_not_warn(stores):
    # The warning is the xarray engine's (xarray users expect it); lazycube.open_dataset keeps quiet.
    assert _warnings_of(lambda: lazycube.open_dataset(stores / "plain.zarr")) == []
    assert os.path.isdir(stores / "plain.zarr")
