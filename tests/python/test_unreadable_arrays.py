"""One array lazycube cannot read (an unknown codec, an unknown data type) does not stop the
others (issue 48, item 6): `lazycube read GROUP other_var` and `lazycube info` work, info lists
the unreadable array with its reason; lazycube.open_dataset and the xarray engine fail naming
it and saying that drop_variables skips it, and with drop_variables=[it] open the others,
value for value as xarray's zarr engine reads the same store without that array. Stores
written by hand from the Zarr v2 and v3 specifications."""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import CliError, run_cli

GOOD = np.arange(6, dtype="<f8") * 1.5


def _write(path, key, doc):
    (path / key).parent.mkdir(parents=True, exist_ok=True)
    (path / key).write_text(json.dumps(doc))


def _v2_store(root, bad_codec=True, with_bad=True):
    root.mkdir()
    _write(root, ".zgroup", {"zarr_format": 2})
    _write(root, ".zattrs", {"title": "t"})
    meta = {"zarr_format": 2, "shape": [6], "chunks": [6], "dtype": "<f8", "compressor": None,
            "filters": None, "fill_value": None, "order": "C"}
    _write(root, "good/.zarray", meta)
    _write(root, "good/.zattrs", {"_ARRAY_DIMENSIONS": ["x"]})
    (root / "good" / "0").write_bytes(GOOD.tobytes())
    if with_bad:
        bad = dict(meta, compressor={"id": "nosuchcodec"}) if bad_codec else dict(meta, dtype="<x9")
        _write(root, "bad/.zarray", bad)
        _write(root, "bad/.zattrs", {"_ARRAY_DIMENSIONS": ["x"]})
        (root / "bad" / "0").write_bytes(b"\0" * 48)
    return str(root)


def _v3_store(root):
    root.mkdir()
    _write(root, "zarr.json", {"zarr_format": 3, "node_type": "group", "attributes": {}})
    meta = {"zarr_format": 3, "node_type": "array", "shape": [6], "data_type": "float64",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [6]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0.0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "dimension_names": ["x"]}
    _write(root, "good/zarr.json", meta)
    (root / "good" / "c").mkdir()
    (root / "good" / "c" / "0").write_bytes(GOOD.tobytes())
    _write(root, "bad/zarr.json", dict(meta, codecs=meta["codecs"] + [{"name": "nosuchcodec"}]))
    return str(root)


def _consolidate(root):
    """Consolidated metadata written by hand: v2 .zmetadata, v3 zarr.json's consolidated_metadata."""
    root = Path(root)
    if (root / "zarr.json").exists():
        group = json.loads((root / "zarr.json").read_text())
        group["consolidated_metadata"] = {"kind": "inline", "must_understand": False, "metadata": {
            name: json.loads((root / name / "zarr.json").read_text()) for name in ("good", "bad")}}
        (root / "zarr.json").write_text(json.dumps(group))
    else:
        docs = {str(f.relative_to(root)): json.loads(f.read_text()) for f in root.rglob(".z*")}
        (root / ".zmetadata").write_text(json.dumps({"zarr_consolidated_format": 1, "metadata": docs}))
    return str(root)


@pytest.fixture(params=["v2 codec", "v2 dtype", "v3 codec", "v2 consolidated", "v3 consolidated"])
def store(request, tmp_path):
    if request.param.startswith("v3"):
        path = _v3_store(tmp_path / "g3.zarr")
    else:
        path = _v2_store(tmp_path / "g2.zarr", bad_codec=request.param != "v2 dtype")
    return _consolidate(path) if request.param.endswith("consolidated") else path


def test_cli_reads_and_lists_the_others(lazycube_cli, store, tmp_path):
    out = tmp_path / "good.npy"
    run_cli(lazycube_cli, "read", store, "good", "-o", out)
    np.testing.assert_array_equal(np.load(out), GOOD)
    info = json.loads(run_cli(lazycube_cli, "info", store, "--json").stdout)
    assert list(info["variables"]) == ["good"]
    assert list(info["unreadable"]) == ["bad"]
    assert ("nosuchcodec" in info["unreadable"]["bad"]) or ("x9" in info["unreadable"]["bad"])
    text = run_cli(lazycube_cli, "info", store).stdout
    assert "Unreadable arrays:" in text and "bad" in text.split("Unreadable arrays:")[1]
    with pytest.raises(CliError, match="array 'bad' cannot be read"):
        run_cli(lazycube_cli, "read", store, "bad", "-o", tmp_path / "bad.npy")


def test_open_dataset_names_it_and_drop_variables_skips_it(store):
    lazycube = pytest.importorskip("lazycube")
    with pytest.raises(lazycube.Error, match=r"array 'bad' cannot be read.*drop_variables=\['bad'\]"):
        lazycube.open_dataset(store)
    ds = lazycube.open_dataset(store, drop_variables=["bad"])
    assert list(ds.variables) == ["good"]
    np.testing.assert_array_equal(ds["good"].values, GOOD)
    # drop_variables travels with the dataset into other processes.
    import pickle
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(ds))["good"].values, GOOD)


def test_xarray_engine_names_it_and_drop_variables_skips_it(store, tmp_path):
    pytest.importorskip("lazycube")
    xr = pytest.importorskip("xarray")
    with pytest.raises(Exception, match=r"array 'bad' cannot be read.*drop_variables"):
        xr.open_dataset(store, engine="lazycube")
    got = xr.open_dataset(store, engine="lazycube", drop_variables="bad")
    # The reference: xarray's zarr engine on the same store without the array it cannot read.
    reference = _v2_store(tmp_path / "ref.zarr", with_bad=False)
    want = xr.open_dataset(reference, engine="zarr", consolidated=False)
    assert list(got.data_vars) == list(want.data_vars) == ["good"]
    assert got["good"].dtype == want["good"].dtype
    np.testing.assert_array_equal(got["good"].values, want["good"].values)
    if "g2" in store:
        xr.testing.assert_identical(got.load(), want.load())
