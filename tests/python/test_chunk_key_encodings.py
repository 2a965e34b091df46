"""Zarr v3 chunk key encodings of the zarr-extensions registry (fanout, suffix, prefix) through
lazycube.open_dataset and xarray's engine: stores written by hand, chunk files at the keys the
registry's algorithm gives, values compared with the NumPy array they were cut from."""
import json

import numpy as np
import pytest
import xarray as xr

from conftest import import_lazycube

lazycube = import_lazycube()


def _fanout_key(index, max_children):
    base = max_children - 1
    parts = []
    for dim, coord in enumerate(index):
        digits = []
        while True:
            digits.append(coord % base)
            coord //= base
            if coord == 0:
                break
        parts.append(f"d{dim}")
        parts.extend(str(d) for d in reversed(digits))
    return "/".join(parts + ["c"])


ENCODINGS = {
    "fanout": ({"name": "fanout", "configuration": {"max_children": 4}},
               lambda idx: _fanout_key(idx, 4)),
    "suffix": ({"name": "suffix", "configuration": {"suffix": ".raw", "base_encoding": {"name": "default"}}},
               lambda idx: "c/" + "/".join(map(str, idx)) + ".raw"),
    "prefix": ({"name": "prefix", "configuration": {"prefix": "chunks/", "base_encoding": "v2"}},
               lambda idx: "chunks/" + ".".join(map(str, idx))),
}


def _write(root, encoding, key_of, values, chunks):
    root.mkdir()
    (root / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    var = root / "t"
    var.mkdir()
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": list(values.shape), "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        "chunk_key_encoding": encoding, "fill_value": "NaN",
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "dimension_names": ["y", "x"], "attributes": {"units": "K"},
    }
    (var / "zarr.json").write_text(json.dumps(meta))
    grid = [-(-s // c) for s, c in zip(values.shape, chunks)]
    for i in range(grid[0]):
        for j in range(grid[1]):
            if (i, j) == (1, 0):
                continue  # absent: read as the fill value
            block = np.full(chunks, np.nan, dtype="<f4")
            part = values[i * chunks[0]:(i + 1) * chunks[0], j * chunks[1]:(j + 1) * chunks[1]]
            block[:part.shape[0], :part.shape[1]] = part
            path = var / key_of((i, j))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(block.tobytes())


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_registry_encodings_read_like_the_array_they_were_cut_from(tmp_path, name):
    encoding, key_of = ENCODINGS[name]
    values = np.arange(7 * 5, dtype="<f4").reshape(7, 5) / 4
    expected = values.copy()
    expected[2:4, 0:2] = np.nan  # chunk (1, 0) was not written
    _write(tmp_path / "s.zarr", encoding, key_of, values, (2, 2))

    ds = xr.open_dataset(tmp_path / "s.zarr", engine="lazycube")
    assert ds["t"].dtype == np.float32 and ds["t"].dims == ("y", "x")
    np.testing.assert_array_equal(ds["t"].values, expected)
    assert ds["t"].attrs["units"] == "K"
    np.testing.assert_array_equal(ds["t"].isel(y=slice(3, 7), x=slice(1, 4)).values, expected[3:7, 1:4])

    native = lazycube.open_dataset(str(tmp_path / "s.zarr"))
    np.testing.assert_array_equal(np.asarray(native["t"].read()), expected)


def test_an_unknown_encoding_names_itself(tmp_path):
    _write(tmp_path / "s.zarr", {"name": "hilbert"}, lambda idx: "c/0/0", np.zeros((2, 2), "<f4"), (2, 2))
    with pytest.raises(lazycube.MetadataError, match="'hilbert'"):
        lazycube.open_dataset(str(tmp_path / "s.zarr"))
