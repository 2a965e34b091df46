"""Zarr v2 conformance against zarr-python 2.13 (numcodecs 0.11), the writer most v2 data comes from.

Each case writes one single-array store at test time with Debian's zarr-python, then runs

    lazycube read STORE --raw -o out.npy

(a single-array URL, no VARIABLE) and compares the result value for value with
`zarr.open(STORE)[...]`:

* dtype: the same type in native byte order (lazycube returns native-endian data; datetime64 and
  timedelta64 keep their unit);
* numbers: exact, NaN equal to NaN (complex too);
* strings (S, U and vlen-utf8 object arrays): compared as Python str; the CLI may write fixed-length
  'S'/'U' numpy types since .npy cannot hold object arrays without pickle;
* `fill_value: null` with absent chunks: zarr-python returns uninitialised memory there, so only
  the stored region is compared with zarr-python, and the absent region must read as the dtype's
  zero (lazycube's documented convention: 0, False, empty string).

The cases cover every v2 feature zarr-python 2.13 can write: dtypes b1, i1..i8, u1..u8, f2/f4/f8,
c8/c16, M8/m8 in units ns us ms s m h D W M Y, fixed-length S and U; both byte orders of every
multi-byte dtype; order C and F; dimension_separator '.' and '/'; fill values (numbers, NaN,
Infinity, -Infinity, null, strings) with absent chunks; compressors blosc (every cname x shuffle
0/1/2), zstd, lz4, gzip, zlib, bz2, lzma; filters delta, fixedscaleoffset, quantize, astype,
shuffle, packbits, categorize, vlen-utf8; partial edge chunks; 0-d, 1-d, 2-d and 3-d arrays.

LAZYCUBE_FIXTURES_SELFTEST=1 replaces the CLI by zarr-python itself (honouring the null-fill
convention), to check this file's own logic while the reader is not available.
"""

import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import numcodecs
import numcodecs.blosc
import numpy as np
import pytest
import zarr

from conftest import read_npy

SELFTEST = os.environ.get("LAZYCUBE_FIXTURES_SELFTEST") == "1"

DATETIME_UNITS = ["ns", "us", "ms", "s", "m", "h", "D", "W", "M", "Y"]
SHAPE2, CHUNKS2 = (7, 11), (3, 4)          # partial edge chunks on both axes
SHAPE3, CHUNKS3 = (5, 6, 7), (2, 4, 3)


@dataclass
class Case:
    id: str
    data: Any                      # numpy array with the values to write
    chunks: Any = None
    kwargs: dict = field(default_factory=dict)   # extra zarr.create arguments
    written: Optional[tuple] = None              # region written (None: everything)


def _rng(tag):
    # Seeded from the tag's characters (not hash(), which is salted per process).
    return np.random.default_rng([ord(ch) for ch in tag])


def make_values(dtype, shape, tag):
    """Deterministic values of `dtype` covering edge cases of the type."""
    dt = np.dtype(dtype)
    rng = _rng(tag)
    n = int(np.prod(shape))
    k = dt.kind
    if k == "b":
        v = rng.random(n) > 0.5
    elif k in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, size=n, dtype=dt.newbyteorder("="), endpoint=True)
        v[:2] = [info.min, info.max][: min(2, n)]
    elif k == "f":
        v = (rng.standard_normal(n) * 1000).astype(dt.newbyteorder("="))
        specials = [np.nan, np.inf, -np.inf, -0.0, np.finfo(dt).max, np.finfo(dt).tiny]
        v[: min(n, len(specials))] = specials[: min(n, len(specials))]
    elif k == "c":
        v = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt.newbyteorder("="))
        if n > 2:
            v[1] = complex(np.nan, 1.0)
            v[2] = complex(-np.inf, 0.5)
    elif k in "Mm":
        v = rng.integers(-10 ** 6, 10 ** 6, size=n).astype(dt.newbyteorder("="))
        if n > 1:
            v[1] = np.array("NaT", dtype=v.dtype)
    elif k == "S":
        alphabet = np.array(list(b"abcdefghijklmnopqrstuvwxyz0123456789 "))
        lens = rng.integers(0, dt.itemsize + 1, size=n)
        v = np.array([bytes(rng.choice(alphabet, size=m).astype(np.uint8)) for m in lens], dtype=dt)
    elif k == "U":
        chars = list("abcXYZ éüß漢字😀")
        width = dt.itemsize // 4
        lens = rng.integers(0, width + 1, size=n)
        v = np.array(["".join(rng.choice(chars, size=m)) for m in lens], dtype=dt)
    else:
        raise ValueError(dt)
    return np.asarray(v).astype(dt).reshape(shape)


def _c(id, dtype, shape=SHAPE2, chunks=CHUNKS2, **kwargs):
    written = kwargs.pop("written", None)
    kwargs.setdefault("compressor", None)
    return Case(id, make_values(dtype, shape, id), chunks, kwargs, written)


def build_cases():
    cases = []

    # --- dtypes x byte orders (no compressor: the dtype alone is under test) ---
    numeric = ["i2", "i4", "i8", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]
    cases.append(_c("dtype-|b1", "|b1"))
    cases.append(_c("dtype-|i1", "|i1"))
    cases.append(_c("dtype-|u1", "|u1"))
    for t in numeric:
        for bo in "<>":
            cases.append(_c("dtype-%s%s" % (bo, t), bo + t))
    for kind in "Mm":
        for unit in DATETIME_UNITS:
            for bo in "<>":
                t = "%s%s8[%s]" % (bo, kind, unit)
                cases.append(_c("dtype-%s" % t, t))
    cases.append(_c("dtype-|S1", "|S1"))
    cases.append(_c("dtype-|S7", "|S7"))
    for bo in "<>":
        cases.append(_c("dtype-%sU1" % bo, bo + "U1"))
        cases.append(_c("dtype-%sU5" % bo, bo + "U5"))

    # --- memory order x dimension separator x dimensionality ---
    for t in ["<f8", ">i2", "<U3", "|S4", ">c16", "|b1"]:
        for order in "CF":
            for sep in "./":
                cases.append(_c("layout-%s-%s-sep%s-2d" % (t, order, "dot" if sep == "." else "slash"),
                                t, order=order, dimension_separator=sep))
    for order in "CF":
        for sep in "./":
            cases.append(_c("layout->f4-%s-sep%s-3d" % (order, "dot" if sep == "." else "slash"),
                            ">f4", SHAPE3, CHUNKS3, order=order, dimension_separator=sep,
                            compressor=numcodecs.Zstd(level=1)))
    cases.append(_c("shape-0d-f8", "<f8", (), (), compressor=numcodecs.Zlib(level=1)))
    cases.append(_c("shape-0d-i4-absent-fill", "<i4", (), (), fill_value=-7, written=()))
    cases.append(_c("shape-1d-u2", "<u2", (10,), (4,)))
    cases.append(_c("shape-1d-one-chunk", "<i8", (10,), (10,)))
    cases.append(_c("shape-1d-chunk-larger-than-array", "<f4", (5,), (8,)))
    cases.append(_c("shape-3d-i1-F", "|i1", SHAPE3, CHUNKS3, order="F"))
    cases.append(_c("shape-2d-empty-dim", "<f4", (0, 4), (2, 2)))

    # --- fill values with deliberately absent chunks (only rows 0:3, one chunk row, written) ---
    half = (slice(0, 3),)
    fills = [
        ("f8-nan", "<f8", np.nan), ("f8-inf", "<f8", np.inf), ("f8-neginf", "<f8", -np.inf),
        ("f8-zero", "<f8", 0.0), ("f8-neg1.5", ">f8", -1.5), ("f4-nan", "<f4", np.nan),
        ("f2-inf", "<f2", np.inf), ("c16-complex", "<c16", 1 + 2j), ("c8-nan", ">c8", complex(np.nan, 0)),
        ("i4-42", "<i4", 42), ("i8-min", ">i8", np.iinfo(np.int64).min), ("u1-255", "|u1", 255),
        ("u8-max", "<u8", np.iinfo(np.uint64).max), ("b1-true", "|b1", True),
        ("S4-bytes", "|S4", b"zz"), ("U4-str", "<U4", "fé"), ("U4-str-be", ">U4", "漢"),
        ("M8s-value", "<M8[s]", np.datetime64(86400, "s")), ("M8ns-NaT", "<M8[ns]", np.datetime64("NaT", "ns")),
        ("m8h-value", ">m8[h]", np.timedelta64(5, "h")),
    ]
    for name, t, fv in fills:
        cases.append(_c("fill-%s" % name, t, fill_value=fv, written=half))
    for t in ["<f8", ">i4", "|u1", "|b1", "<c8", "<M8[ms]", "|S3", "<U2"]:
        cases.append(_c("fill-null-%s" % t, t, fill_value=None, written=half))
    cases.append(_c("fill-nan-nothing-written", "<f8", fill_value=np.nan, written=(slice(0, 0),)))

    # --- compressors ---
    for cname in numcodecs.blosc.list_compressors():
        for shuffle in (numcodecs.Blosc.NOSHUFFLE, numcodecs.Blosc.SHUFFLE, numcodecs.Blosc.BITSHUFFLE):
            for t in ["<f4", ">i8"]:
                cases.append(_c("blosc-%s-shuffle%d-%s" % (cname, shuffle, t), t,
                                compressor=numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle)))
    cases.append(_c("blosc-lz4-shuffle1-|u1", "|u1", compressor=numcodecs.Blosc(cname="lz4", shuffle=1)))
    cases.append(_c("blosc-zstd-blocksize256-<f8", "<f8", (40, 30), (16, 16),
                    compressor=numcodecs.Blosc(cname="zstd", clevel=3, shuffle=2, blocksize=256)))
    cases.append(_c("blosc-default-<U3", "<U3", compressor=numcodecs.Blosc()))
    for level in (1, 3, 19):
        cases.append(_c("zstd-level%d" % level, "<f8", compressor=numcodecs.Zstd(level=level)))
    cases.append(_c("zstd->i2", ">i2", compressor=numcodecs.Zstd()))
    cases.append(_c("lz4-<f4", "<f4", compressor=numcodecs.LZ4()))
    cases.append(_c("lz4-accel10->u4", ">u4", compressor=numcodecs.LZ4(acceleration=10)))
    for level in (1, 9):
        cases.append(_c("gzip-level%d" % level, "<i4", compressor=numcodecs.GZip(level=level)))
        cases.append(_c("zlib-level%d" % level, "<i4", compressor=numcodecs.Zlib(level=level)))
    cases.append(_c("bz2-<f8", "<f8", compressor=numcodecs.BZ2(level=9)))
    cases.append(_c("lzma-<f8", "<f8", compressor=numcodecs.LZMA()))
    cases.append(_c("lzma-preset1->i4", ">i4", compressor=numcodecs.LZMA(preset=1)))
    cases.append(_c("gzip-3d-F", "<f4", SHAPE3, CHUNKS3, order="F", compressor=numcodecs.GZip()))

    # --- filters ---
    cases.append(Case("filter-delta-<i4", np.arange(77, dtype="<i4").reshape(SHAPE2) * 3 - 50, CHUNKS2,
                      {"filters": [numcodecs.Delta(dtype="<i4")], "compressor": numcodecs.Zstd()}))
    cases.append(Case("filter-delta-astype-<i8", np.arange(77, dtype="<i8").reshape(SHAPE2), CHUNKS2,
                      {"filters": [numcodecs.Delta(dtype="<i8", astype="<i2")], "compressor": None}))
    fso = np.linspace(-5.0, 5.0, 77).reshape(SHAPE2)
    cases.append(Case("filter-fixedscaleoffset-<f8", fso, CHUNKS2,
                      {"filters": [numcodecs.FixedScaleOffset(offset=1.0, scale=100, dtype="<f8", astype="<i2")],
                       "compressor": numcodecs.Blosc()}))
    cases.append(Case("filter-fixedscaleoffset-u1-<f4", np.linspace(0, 2.5, 77, dtype="<f4").reshape(SHAPE2),
                      CHUNKS2, {"filters": [numcodecs.FixedScaleOffset(offset=0, scale=10, dtype="<f4", astype="u1")],
                                "compressor": None}))
    q = make_values("<f8", SHAPE2, "quantize")
    q = np.clip(np.nan_to_num(q, nan=1.0), -1e6, 1e6)
    cases.append(Case("filter-quantize-<f8", q, CHUNKS2,
                      {"filters": [numcodecs.Quantize(digits=3, dtype="<f8")], "compressor": numcodecs.Zlib()}))
    cases.append(Case("filter-quantize-astype-f4", q, CHUNKS2,
                      {"filters": [numcodecs.Quantize(digits=2, dtype="<f8", astype="<f4")], "compressor": None}))
    cases.append(Case("filter-astype-f8-as-f4", q, CHUNKS2,
                      {"filters": [numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")], "compressor": None}))
    cases.append(Case("filter-astype-i8-as-u1", np.arange(77, dtype="<i8").reshape(SHAPE2), CHUNKS2,
                      {"filters": [numcodecs.AsType(encode_dtype="|u1", decode_dtype="<i8")],
                       "compressor": numcodecs.GZip()}))
    for t in ["<f8", ">i4", "<c8"]:
        cases.append(_c("filter-shuffle-%s" % t, t, filters=[numcodecs.Shuffle(elementsize=np.dtype(t).itemsize)],
                        compressor=numcodecs.Zlib()))
    cases.append(_c("filter-packbits-b1", "|b1", filters=[numcodecs.PackBits()]))
    cases.append(_c("filter-packbits-b1-1d-odd", "|b1", (13,), (5,), filters=[numcodecs.PackBits()],
                    compressor=numcodecs.Zstd()))
    labels = ["", "north", "south", "été"]
    cat = np.array(labels, dtype="<U5")[_rng("cat").integers(0, 4, size=77)].reshape(SHAPE2)
    cases.append(Case("filter-categorize-<U5", cat, CHUNKS2,
                      {"filters": [numcodecs.Categorize(labels=labels[1:], dtype="<U5", astype="u1")],
                       "compressor": None}))
    obj = np.array(["", "a", "ünïcödé", "漢字", "emoji 😀", "x" * 40] * 13, dtype=object)[:77].reshape(SHAPE2)
    cases.append(Case("filter-vlen-utf8", obj, CHUNKS2,
                      {"dtype": object, "object_codec": numcodecs.VLenUTF8(), "compressor": None}))
    cases.append(Case("filter-vlen-utf8-blosc-fill", obj, CHUNKS2,
                      {"dtype": object, "object_codec": numcodecs.VLenUTF8(), "compressor": numcodecs.Blosc(),
                       "fill_value": ""}, written=half))
    cases.append(Case("filter-chain-delta-shuffle-zstd", np.arange(77, dtype=">i8").reshape(SHAPE2) ** 2, CHUNKS2,
                      {"filters": [numcodecs.Delta(dtype=">i8"), numcodecs.Shuffle(elementsize=8)],
                       "compressor": numcodecs.Zstd()}))
    return cases


CASES = build_cases()


def _write_store(case, path):
    kwargs = dict(case.kwargs)
    dtype = kwargs.pop("dtype", case.data.dtype)
    z = zarr.open(str(path), mode="w", shape=case.data.shape, chunks=case.chunks, dtype=dtype, **kwargs)
    if case.written is None:
        z[...] = case.data
    elif case.data.ndim == 0:
        pass  # 0-d "absent" case: never written
    else:
        if z[case.written].size:
            z[case.written] = case.data[case.written]
    return z


def _written_mask(case):
    mask = np.zeros(case.data.shape, dtype=bool)
    if case.written is None:
        mask[...] = True
    elif case.data.ndim:
        mask[case.written] = True
    return mask


def _zero_of(dtype):
    if dtype == object or dtype.kind in "SU":
        return ""
    return np.zeros((), dtype=dtype)[()]


def _as_str(arr):
    return [x.decode("latin-1") if isinstance(x, bytes) else str(x) for x in np.asarray(arr).ravel().tolist()]


def assert_same_values(got, expected, where=None):
    """got: what lazycube returned; expected: zarr-python's values. `where`: mask of elements to
    compare (None: all)."""
    assert got.shape == expected.shape, "shape %s != %s" % (got.shape, expected.shape)
    if where is not None:
        got, expected = got[where], expected[where]
    if expected.dtype == object or expected.dtype.kind in "SU":
        assert got.dtype == object or got.dtype.kind in "SU", "string data came back as %s" % got.dtype
        if expected.dtype.kind in "SU":
            assert got.dtype.kind == expected.dtype.kind, "%s came back as %s" % (expected.dtype, got.dtype)
        assert _as_str(got) == _as_str(expected)
        return
    native = expected.dtype.newbyteorder("=")
    assert got.dtype == native, "dtype %s, expected %s" % (got.dtype, native)
    if native.kind in "Mm":
        np.testing.assert_array_equal(got.view("i8"), expected.astype(native).view("i8"))
    elif native.kind in "fc":
        exp = expected.astype(native)
        # Complex: real and imaginary parts separately, so a NaN in one part hides nothing.
        parts = [(got.real, exp.real), (got.imag, exp.imag)] if native.kind == "c" else [(got, exp)]
        for g, e in parts:
            np.testing.assert_array_equal(g, e)  # NaN == NaN here
            np.testing.assert_array_equal(np.signbit(g), np.signbit(e))  # signed zeros survive
    else:
        np.testing.assert_array_equal(got, expected.astype(native))


def _selftest_read(store, case):
    """Stand-in for the CLI: zarr-python's values with lazycube's null-fill convention."""
    z = zarr.open(str(store), mode="r")
    out = z[...]
    if z.fill_value is None and case.written is not None:
        out = np.array(out, copy=True)
        out[~_written_mask(case)] = _zero_of(z.dtype)
    if out.dtype != object:
        out = out.astype(out.dtype.newbyteorder("="))
    else:
        out = out.astype(str)
    return out


@pytest.fixture
def reader(request, tmp_path):
    if SELFTEST:
        return _selftest_read
    cli = request.getfixturevalue("lazycube_cli")

    def _read(store, case):
        return read_npy(cli, store, tmp_path, raw=True)

    return _read


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_zarr_python_v2_fixture(case, reader, tmp_path):
    store = tmp_path / "store.zarr"
    z = _write_store(case, store)
    # Sanity of the fixture itself: zarr-python wrote v2 metadata with what we asked for.
    meta = json.loads((store / ".zarray").read_text())
    assert meta["zarr_format"] == 2

    expected = zarr.open(str(store), mode="r")[...]
    got = reader(store, case)

    if z.fill_value is None and case.written is not None:
        mask = _written_mask(case)
        assert_same_values(got, expected, mask)
        zero = _zero_of(expected.dtype)
        absent = got[~mask]
        if got.dtype == object or got.dtype.kind in "SU":
            assert all(s == "" for s in _as_str(absent)), "absent null-fill chunks must read as ''"
        else:
            assert np.all(absent == zero), "absent null-fill chunks must read as the dtype's zero"
    else:
        assert_same_values(got, expected)
