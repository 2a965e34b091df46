#!/usr/bin/python3
"""Checks the bundled sample: both copies decode to identical values and agree on metadata.

    /usr/bin/python3 scripts/check_sample.py [DATADIR]      # DATADIR defaults to data/

The v2 copy is read with zarr-python 2.13 (and once through xarray, to check the CF encoding:
time axis, msl packing and missing values). The v3 copy is decoded here, independently of
lazycube: zarr.json metadata, sharding_indexed shards with their CRC-32C-checked index, inner
chunks bytes(little) + zstd. Exits non-zero with a message on the first disagreement.
"""

import json
import os
import struct
import sys

import numpy as np
import numcodecs
import zarr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sample import crc32c  # noqa: E402  (same checksum; its check value is asserted there)

EMPTY = 2 ** 64 - 1
EXPECTED_VARS = ["latitude", "longitude", "msl", "t2m", "time", "u10", "v10"]


class SampleError(Exception):
    pass


def _load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _fill(meta, dtype):
    fv = meta["fill_value"]
    if isinstance(fv, str):
        return {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}[fv]
    return np.array(fv, dtype=dtype)


def _decode_chunk(codecs, data, shape, dtype, where):
    """bytes(little|big) [+ zstd] -> ndarray of `shape` (the only codecs the sample uses)."""
    for codec in reversed(codecs[1:]):
        if codec["name"] != "zstd":
            raise SampleError("%s: unexpected bytes-to-bytes codec %r" % (where, codec["name"]))
        data = numcodecs.Zstd().decode(data)
    first = codecs[0]
    if first["name"] != "bytes":
        raise SampleError("%s: unexpected array-to-bytes codec %r" % (where, first["name"]))
    endian = "<" if first.get("configuration", {}).get("endian", "little") == "little" else ">"
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) != expected:
        raise SampleError("%s: decoded %d bytes, expected %d" % (where, len(data), expected))
    return np.frombuffer(data, dtype=dtype.newbyteorder(endian)).reshape(shape).astype(dtype)


def _decode_shard(config, blob, shard_shape, dtype, fill, where):
    inner = config["chunk_shape"]
    grid = [s // c for s, c in zip(shard_shape, inner)]
    n = int(np.prod(grid))
    if config.get("index_location", "end") != "end":
        raise SampleError("%s: index_location must be 'end' in the sample" % where)
    if [c["name"] for c in config["index_codecs"]] != ["bytes", "crc32c"]:
        raise SampleError("%s: unexpected index codecs %r" % (where, config["index_codecs"]))
    index_size = 16 * n + 4
    if len(blob) < index_size:
        raise SampleError("%s: shard of %d bytes is shorter than its index" % (where, len(blob)))
    index_bytes, crc = blob[-index_size:-4], blob[-4:]
    if struct.unpack("<I", crc)[0] != crc32c(index_bytes):
        raise SampleError("%s: shard index CRC-32C mismatch" % where)
    index = struct.unpack("<%dQ" % (2 * n), index_bytes)
    out = np.full(shard_shape, fill, dtype=dtype)
    for k, idx in enumerate(np.ndindex(*grid)):
        offset, nbytes = index[2 * k], index[2 * k + 1]
        if offset == EMPTY and nbytes == EMPTY:
            continue
        if offset + nbytes > len(blob) - index_size:
            raise SampleError("%s: inner chunk %s overlaps the index" % (where, idx))
        chunk = _decode_chunk(config["codecs"], blob[offset:offset + nbytes], inner, dtype,
                              "%s inner chunk %s" % (where, idx))
        out[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, inner))] = chunk
    return out


def read_v3_array(array_dir, meta=None):
    """Decodes a whole v3 array of the sample (regular grid, default '/' keys) into numpy."""
    meta = meta or _load_json(os.path.join(array_dir, "zarr.json"))
    dtype = np.dtype(meta["data_type"])
    shape = meta["shape"]
    chunk_shape = meta["chunk_grid"]["configuration"]["chunk_shape"]
    sep = meta["chunk_key_encoding"]["configuration"]["separator"]
    fill = _fill(meta, dtype)
    grid = [-(-s // c) for s, c in zip(shape, chunk_shape)]
    padded = np.full([g * c for g, c in zip(grid, chunk_shape)], fill, dtype=dtype)
    codecs = meta["codecs"]
    for idx in np.ndindex(*grid):
        key = "c" + "".join(sep + str(i) for i in idx)
        path = os.path.join(array_dir, *key.split("/"))
        where = "%s/%s" % (array_dir, key)
        if not os.path.exists(path):
            continue  # absent chunk: fill value
        with open(path, "rb") as f:
            blob = f.read()
        if codecs[0]["name"] == "sharding_indexed":
            block = _decode_shard(codecs[0]["configuration"], blob, chunk_shape, dtype, fill, where)
        else:
            block = _decode_chunk(codecs, blob, chunk_shape, dtype, where)
        padded[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunk_shape))] = block
    return padded[tuple(slice(0, s) for s in shape)]


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def check(datadir):
    v2path = os.path.join(datadir, "era5_sample_v2.zarr")
    v3path = os.path.join(datadir, "era5_sample_v3.zarr")
    g2 = zarr.open_consolidated(v2path, mode="r")
    root3 = _load_json(os.path.join(v3path, "zarr.json"))
    if root3.get("zarr_format") != 3 or root3.get("node_type") != "group":
        raise SampleError("v3 root zarr.json is not a group")
    cons = root3["consolidated_metadata"]
    if cons.get("kind") != "inline" or cons.get("must_understand") is not False:
        raise SampleError("v3 consolidated_metadata must be kind inline, must_understand false")
    if sorted(g2.array_keys()) != EXPECTED_VARS or sorted(cons["metadata"]) != EXPECTED_VARS:
        raise SampleError("variables differ: v2 %s, v3 %s" % (sorted(g2.array_keys()), sorted(cons["metadata"])))
    if dict(g2.attrs) != root3["attributes"]:
        raise SampleError("global attributes differ between v2 and v3")

    for name in EXPECTED_VARS:
        a2 = g2[name]
        meta3 = cons["metadata"][name]
        on_disk = _load_json(os.path.join(v3path, name, "zarr.json"))
        if on_disk != meta3:
            raise SampleError("%s: consolidated metadata differs from %s/zarr.json" % (name, name))
        attrs2 = dict(a2.attrs)
        dims2 = attrs2.pop("_ARRAY_DIMENSIONS")
        if attrs2 != meta3["attributes"] or dims2 != meta3["dimension_names"]:
            raise SampleError("%s: attributes or dimension names differ" % name)
        v2 = a2[...]
        v3 = read_v3_array(os.path.join(v3path, name), meta3)
        if not _same(v2, v3):
            raise SampleError("%s: values differ between v2 and v3 (dtype %s/%s, shape %s/%s)"
                              % (name, v2.dtype, v3.dtype, v2.shape, v3.shape))
        print("ok %-9s %-7s %s" % (name, v2.dtype, "x".join(map(str, v2.shape))))

    _check_cf(v2path)
    return 0


def _check_cf(v2path):
    """The v2 copy decodes through xarray the way ERA5 does (when xarray is installed)."""
    try:
        import xarray as xr
    except ImportError:  # pragma: no cover - xarray is part of the Debian package list
        print("xarray not installed: CF decoding not checked")
        return
    ds = xr.open_zarr(v2path, consolidated=True)
    if str(ds.time.values[0]) != "2019-03-01T00:00:00.000000000" or ds.sizes["time"] != 96:
        raise SampleError("time does not decode to 96 hours from 2019-03-01: %r" % ds.time.values[:2])
    if not np.all(np.diff(ds.time.values) == np.timedelta64(1, "h")):
        raise SampleError("time steps are not hourly")
    if float(ds.latitude[0]) != 60.0 or not np.all(np.diff(ds.latitude.values) < 0):
        raise SampleError("latitude must start at 60.0 and descend")
    msl = ds.msl.values
    n_missing = int(np.isnan(msl).sum())
    if n_missing == 0 or not (90000 < np.nanmin(msl) and np.nanmax(msl) < 110000):
        raise SampleError("msl does not unpack to Pa with a few missing points (%d missing)" % n_missing)
    t2m = ds.t2m.values
    if not (240 < t2m.min() and t2m.max() < 310):
        raise SampleError("t2m outside a plausible range")
    print("ok CF decoding via xarray: time %s .. %s, msl %d missing points"
          % (str(ds.time.values[0])[:16], str(ds.time.values[-1])[:16], n_missing))


if __name__ == "__main__":
    datadir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
    try:
        sys.exit(check(datadir))
    except SampleError as e:
        print("sample check FAILED:", e, file=sys.stderr)
        sys.exit(1)
