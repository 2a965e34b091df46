"""Issue 48, real files from the wild: Zarr v3 arrays spelled as other writers spell them, written
by hand from the specs (zarr.json plus chunk bytes encoded here; zarr-python 3 is not installable
here), read through lazycube.open_dataset, xarray's engine="lazycube" and the CLI.

- Checksums (crc32c, numcodecs.crc32 / adler32) are verified whatever the codec's spelling: the
  v3.1 short-hand string, an object with or without configuration, the numcodecs.* alias; a
  damaged chunk is an error (the CLI exits non-zero), never values.
- Codec configurations take a dtype however NumPy spells it ("float32", "<f4", "f4", "=f4").
- reshape with lists of axes on a stored (and sharded) array.
- struct with a `bytes` codec without endian (as zarr-python 3 writes it) reads as little-endian
  fields, and lazycube writes struct arrays the same way.
"""

import json
import subprocess
import zlib

import numpy as np
import pytest
import xarray as xr

from conftest import import_lazycube, write_v3_array as write_array

lazycube = import_lazycube()


# ------------------------------------------------------------------ helpers

def crc32c(data):
    """CRC-32C (Castagnoli), bit by bit: crc32c(b"123456789") == 0xE3069283."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283


def with_crc32c(payload):
    return payload + crc32c(payload).to_bytes(4, "little")


def read(store, name):
    return lazycube.open_dataset(str(store), decode_cf=False)[name].values


def check(store, name, want):
    got = read(store, name)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    with xr.open_dataset(store, engine="lazycube", decode_cf=False) as ds:
        assert ds[name].dtype == want.dtype
        np.testing.assert_array_equal(ds[name].values, want)


def cli_read_fails(cli, store, name, tmp_path, expect):
    """`lazycube read STORE NAME -o OUT.npy` exits non-zero naming `expect`, writing no values."""
    out = tmp_path / "damaged.npy"
    proc = subprocess.run([str(cli), "read", str(store), name, "-o", str(out)], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0, "read a damaged chunk with exit 0: %s" % proc.stdout
    assert expect in proc.stderr, proc.stderr


def damage(path, at=-8, n=8):
    """Overwrites n bytes of the file at `at` (from the end when negative) with 0xFF."""
    data = bytearray(path.read_bytes())
    start = at % len(data)
    data[start:start + n] = b"\xff" * n
    path.write_bytes(bytes(data))


# ------------------------------------------------------------------ 1. checksums in every spelling

CRC32C_SPELLINGS = ["crc32c", {"name": "crc32c"}, {"name": "crc32c", "configuration": {}},
                    {"name": "crc32c", "configuration": None}, "numcodecs.crc32c", {"name": "numcodecs.crc32c"}]
BYTES_SPELLINGS = ["bytes", {"name": "bytes"}, {"name": "bytes", "configuration": {}}]


@pytest.mark.parametrize("bytes_codec", BYTES_SPELLINGS, ids=["bytes-str", "bytes-obj", "bytes-obj-conf"])
@pytest.mark.parametrize("checksum", CRC32C_SPELLINGS, ids=lambda s: json.dumps(s).replace(" ", ""))
def test_crc32c_is_verified_in_every_spelling(tmp_path, lazycube_cli, checksum, bytes_codec):
    values = np.arange(16, dtype="u1") * 7
    chunks = {(i,): with_crc32c(values[8 * i:8 * i + 8].tobytes()) for i in range(2)}
    arr = write_array(tmp_path, "v", "uint8", [16], [8], [bytes_codec, checksum], chunks)
    check(tmp_path, "v", values)
    # The issue's damage: the chunk's last eight bytes (payload and checksum) overwritten.
    damage(arr / "c" / "1")
    with pytest.raises(Exception, match="crc32c mismatch"):
        read(tmp_path, "v")
    cli_read_fails(lazycube_cli, tmp_path, "v", tmp_path, "crc32c mismatch")
    # One payload byte, the checksum intact.
    (arr / "c" / "1").write_bytes(chunks[(1,)])
    damage(arr / "c" / "1", at=2, n=1)
    with pytest.raises(Exception, match="crc32c mismatch"):
        read(tmp_path, "v")


@pytest.mark.parametrize("name,fn", [("crc32", zlib.crc32), ("adler32", zlib.adler32)])
@pytest.mark.parametrize("form", ["str", "obj", "obj-conf"])
def test_numcodecs_checksums_are_verified_in_every_spelling(tmp_path, lazycube_cli, name, fn, form):
    # numcodecs' Checksum32: the 4-byte little-endian checksum, then the payload.
    full = "numcodecs." + name
    checksum = {"str": full, "obj": {"name": full}, "obj-conf": {"name": full, "configuration": {}}}[form]
    values = np.arange(8, dtype="<i4") * -3
    payload = values.tobytes()
    chunk = fn(payload).to_bytes(4, "little") + payload
    arr = write_array(tmp_path, "v", "int32", [8], [8],
                      [{"name": "bytes", "configuration": {"endian": "little"}}, checksum], {(0,): chunk})
    check(tmp_path, "v", values)
    damage(arr / "c" / "0")
    with pytest.raises(Exception, match=name + " mismatch"):
        read(tmp_path, "v")
    cli_read_fails(lazycube_cli, tmp_path, "v", tmp_path, name + " mismatch")


@pytest.mark.parametrize("spelling", ["crc32c", {"name": "crc32c"}])
def test_sharded_checksums_in_short_hand_are_verified(tmp_path, lazycube_cli, spelling):
    # A shard of two inner chunks: inner codecs ["bytes", "crc32c"], the index [bytes, crc32c],
    # both in the spelling under test.
    values = np.arange(8, dtype="u1") + 100
    inner = [with_crc32c(values[:4].tobytes()), with_crc32c(values[4:].tobytes())]
    index = np.array([[0, len(inner[0])], [len(inner[0]), len(inner[1])]], dtype="<u8").tobytes()
    shard = inner[0] + inner[1] + with_crc32c(index)
    codecs = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4], "codecs": ["bytes", spelling],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, spelling]}}]
    arr = write_array(tmp_path, "v", "uint8", [8], [8], codecs, {(0,): shard})
    check(tmp_path, "v", values)
    # An inner chunk's payload.
    data = bytearray(shard)
    data[5] ^= 0xFF
    (arr / "c" / "0").write_bytes(bytes(data))
    with pytest.raises(Exception, match="crc32c mismatch"):
        read(tmp_path, "v")
    cli_read_fails(lazycube_cli, tmp_path, "v", tmp_path, "crc32c mismatch")
    # The index.
    data = bytearray(shard)
    data[-8] ^= 0x01
    (arr / "c" / "0").write_bytes(bytes(data))
    with pytest.raises(Exception, match="crc32c mismatch"):
        read(tmp_path, "v")


# ------------------------------------------------------------------ 2. dtypes however NumPy spells them

SPELLINGS_F4 = ["float32", "<f4", "f4", "=f4", "single", "f"]


@pytest.mark.parametrize("spelling", SPELLINGS_F4)
def test_fixedscaleoffset_dtype_spellings(tmp_path, spelling):
    numcodecs = pytest.importorskip("numcodecs")
    values = np.array([0.5, 1.25, -3.0, 10.0, 7.75, 0.0], dtype="<f4")
    codec = numcodecs.FixedScaleOffset(offset=1.0, scale=4, dtype="<f4", astype="<i2")
    encoded = codec.encode(values)
    conf = {"offset": 1.0, "scale": 4, "dtype": spelling, "astype": {"<f4": "<i2"}.get(spelling, "int16")}
    codecs = [{"name": "numcodecs.fixedscaleoffset", "configuration": conf},
              {"name": "bytes", "configuration": {"endian": "little"}}]
    write_array(tmp_path, "v", "float32", [6], [6], codecs, {(0,): np.asarray(encoded, dtype="<i2").tobytes()})
    check(tmp_path, "v", codec.decode(encoded).astype("<f4"))


@pytest.mark.parametrize("spelling", ["float64", "<f8", "f8", "=f8", "double", "float", "d"])
def test_delta_and_astype_dtype_spellings(tmp_path, spelling):
    numcodecs = pytest.importorskip("numcodecs")
    values = np.array([1.0, 2.5, 4.0, 8.0], dtype="<f8")
    delta = numcodecs.Delta(dtype="<f8")
    codecs = [{"name": "numcodecs.delta", "configuration": {"dtype": spelling}},
              {"name": "bytes", "configuration": {"endian": "little"}}]
    write_array(tmp_path, "v", "float64", [4], [4], codecs, {(0,): np.asarray(delta.encode(values)).tobytes()})
    check(tmp_path, "v", values)

    astype = numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")
    root = tmp_path / "astype"
    codecs = [{"name": "numcodecs.astype", "configuration": {"encode_dtype": "float32", "decode_dtype": spelling}},
              {"name": "bytes", "configuration": {"endian": "little"}}]
    write_array(root, "v", "float64", [4], [4], codecs, {(0,): np.asarray(astype.encode(values)).tobytes()})
    check(root, "v", values)


@pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated metadata")
@pytest.mark.parametrize("spelling", ["float32", "<f4", "f4"])
def test_v2_filters_take_numpy_dtype_names(tmp_path, spelling):
    # Zarr v2 .zarray filters as numcodecs' get_config() writes them, dtype spelled by name.
    numcodecs = pytest.importorskip("numcodecs")
    values = np.array([[0.5, 1.5, 2.5], [3.5, 4.5, 5.5]], dtype="<f4")
    codec = numcodecs.Quantize(digits=2, dtype="<f4")
    encoded = np.asarray(codec.encode(values), dtype="<f4")
    arr = tmp_path / "v"
    arr.mkdir(parents=True)
    (tmp_path / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    (arr / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [2, 3], "chunks": [2, 3], "dtype": "<f4", "compressor": None,
        "fill_value": 0.0, "order": "C", "filters": [{"id": "quantize", "digits": 2, "dtype": spelling}]}))
    (arr / ".zattrs").write_text(json.dumps({"_ARRAY_DIMENSIONS": ["y", "x"]}))
    (arr / "0.0").write_bytes(encoded.tobytes())
    check(tmp_path, "v", encoded.reshape(2, 3))


# ------------------------------------------------------------------ 4. reshape with lists of axes

def test_reshape_with_lists_of_axes(tmp_path):
    # [[0, 1], [2]] on (3, 4, 10) chunks: stored as (12, 10) blocks in the same C order.
    values = np.arange(2 * 3 * 4 * 10, dtype="<i2").reshape(6, 4, 10)
    codecs = [{"name": "reshape", "configuration": {"shape": [[0, 1], [2]]}},
              {"name": "bytes", "configuration": {"endian": "little"}}]
    chunks = {(i, 0, 0): values[3 * i:3 * i + 3].tobytes() for i in range(2)}
    write_array(tmp_path, "v", "int16", [6, 4, 10], [3, 4, 10], codecs, chunks)
    check(tmp_path, "v", values)
    # With -1 and a list, and a fill value (the fill's check sees the real chunk).
    root = tmp_path / "b"
    codecs = [{"name": "reshape", "configuration": {"shape": [[0], -1]}},
              {"name": "bytes", "configuration": {"endian": "little"}}]
    write_array(root, "v", "int16", [6, 4, 10], [3, 4, 10], codecs, {(1, 0, 0): values[3:].tobytes()},
                fill_value=-5)
    want = values.copy()
    want[:3] = -5
    check(root, "v", want)


def test_reshape_with_lists_of_axes_inside_sharding(tmp_path):
    values = np.arange(4 * 4 * 6, dtype="<u2").reshape(4, 4, 6)
    inner = [values[2 * i:2 * i + 2].tobytes() for i in range(2)]
    index = np.array([[0, len(inner[0])], [len(inner[0]), len(inner[1])]], dtype="<u8").tobytes()
    codecs = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 4, 6],
        "codecs": [{"name": "reshape", "configuration": {"shape": [[0, 1], [2]]}},
                   {"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, "crc32c"]}}]
    write_array(tmp_path, "v", "uint16", [4, 4, 6], [4, 4, 6], codecs,
                {(0, 0, 0): inner[0] + inner[1] + with_crc32c(index)})
    check(tmp_path, "v", values)


# ------------------------------------------------------------------ 5. struct with bytes and no endian

STRUCT = {"name": "struct", "configuration": {"fields": [
    {"name": "id", "data_type": "int32"}, {"name": "value", "data_type": "float64"},
    {"name": "flag", "data_type": "uint8"}]}}
RECORD = np.dtype([("id", "<i4"), ("value", "<f8"), ("flag", "u1")])
STRUCTURED = {"name": "structured", "configuration": {"fields": [["id", "int32"], ["value", "float64"],
                                                                 ["flag", "uint8"]]}}


def _records(n):
    r = np.zeros(n, dtype=RECORD)
    r["id"] = np.arange(n) * 1000 - 7
    r["value"] = np.arange(n) + 0.25
    r["flag"] = np.arange(n) + 1
    return r


@pytest.mark.parametrize("bytes_codec", ["bytes", {"name": "bytes"}, {"name": "bytes", "configuration": {}}])
def test_struct_with_bytes_without_endian_reads_little_endian_fields(tmp_path, bytes_codec):
    records = _records(5)
    chunks = {(0,): records[:3].tobytes(), (1,): records[3:].tobytes() + np.zeros(1, RECORD).tobytes()}
    write_array(tmp_path, "rec", STRUCT, [5], [3], [bytes_codec, "crc32c"],
                {k: with_crc32c(v) for k, v in chunks.items()}, fill_value={"id": 0, "value": 0.0, "flag": 0})
    got = read(tmp_path, "rec")
    assert got.dtype.names == RECORD.names
    for f in RECORD.names:
        np.testing.assert_array_equal(got[f], records[f])


def test_legacy_structured_with_bytes_without_endian(tmp_path):
    # zarr-python 3's legacy `structured` type (fields as [name, type] pairs), base64 fill.
    pytest.importorskip("base64")
    import base64
    records = _records(4)
    fill = base64.b64encode(np.zeros(1, RECORD).tobytes()).decode()
    write_array(tmp_path, "rec", STRUCTURED, [4], [4], [{"name": "bytes"}], {(0,): records.tobytes()},
                fill_value=fill)
    got = read(tmp_path, "rec")
    for f in RECORD.names:
        np.testing.assert_array_equal(got[f], records[f])


def test_an_all_ones_frame_is_a_valid_crc32c_in_every_spelling(tmp_path):
    # Eight 0xFF bytes over a 4-element uint8 chunk are four 255s and their true CRC-32C
    # (crc32c(b"\xff" * 4) == 0xFFFFFFFF, as for any CRC with an all-ones start): no checksum can
    # tell that frame from data. Every spelling reads it the same way.
    assert crc32c(b"\xff" * 4) == 0xFFFFFFFF
    for k, spelling in enumerate(CRC32C_SPELLINGS):
        root = tmp_path / str(k)
        write_array(root, "v", "uint8", [8], [4], ["bytes", spelling],
                    {(0,): with_crc32c(bytes([1, 2, 3, 4])), (1,): b"\xff" * 8})
        check(root, "v", np.array([1, 2, 3, 4, 255, 255, 255, 255], dtype="u1"))


# ------------------------------------------------------------------ 7. zarrs' optional data type

def _optional_chunk(values, mask, inner):
    """The optional codec's chunk (mask_codecs [packbits], data_codecs [bytes little]): u64 LE
    lengths of the encoded mask and data, the mask packed LSB first, the present values."""
    packed = np.packbits(np.asarray(mask, dtype=bool).ravel(), bitorder="little").tobytes()
    keep = np.asarray(mask, dtype=bool).ravel()
    data = np.asarray(values, dtype=inner).ravel()[keep].astype(np.dtype(inner).newbyteorder("<")).tobytes()
    return len(packed).to_bytes(8, "little") + len(data).to_bytes(8, "little") + packed + data


OPTIONAL_CODECS = [{"name": "optional", "configuration": {
    "mask_codecs": [{"name": "packbits"}],
    "data_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]


def _zarrs_sample(root):
    """zarrs' registry sample array_optional.zarr, rebuilt from its description: a 4x4 uint8 array
    in 2x2 chunks, N marking null:
         0  N  2  3
         N  5  N  7
         8  9  N  N
        12  N  N  N"""
    values = np.array([[0, 0, 2, 3], [0, 5, 0, 7], [8, 9, 0, 0], [12, 0, 0, 0]], dtype="u1")
    mask = np.array([[1, 0, 1, 1], [0, 1, 0, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=bool)
    chunks = {}
    for i in range(2):
        for j in range(2):
            s = np.s_[2 * i:2 * i + 2, 2 * j:2 * j + 2]
            chunks[(i, j)] = _optional_chunk(values[s], mask[s], "u1")
    data_type = {"name": "optional", "configuration": {"name": "uint8", "configuration": {}}}
    write_array(root, "array", data_type, [4, 4], [2, 2], OPTIONAL_CODECS, chunks, fill_value=None)
    want = values.astype("f8")
    want[~mask] = np.nan
    return want


def test_zarrs_optional_sample_reads_null_as_nan(tmp_path, lazycube_cli):
    want = _zarrs_sample(tmp_path)
    check(tmp_path, "array", want)
    # Not CF decoding: decode_cf=True, the CLI with and without --raw read the same.
    np.testing.assert_array_equal(lazycube.open_dataset(str(tmp_path))["array"].values, want)
    from conftest import read_npy
    for raw in (False, True):
        np.testing.assert_array_equal(read_npy(lazycube_cli, tmp_path, tmp_path, variable="array", raw=raw,
                                               name="o%d.npy" % raw), want)


@pytest.mark.parametrize("inner", ["bool", "int8", "int16", "int64", "uint32", "float32", "float64"])
def test_optional_inner_types(tmp_path, inner):
    rng = np.random.default_rng(3)
    np_inner = np.dtype(inner)
    values = (rng.integers(0, 2, 12) if inner == "bool" else rng.integers(-50, 100, 12)).astype(np_inner)
    if np_inner.kind == "u":
        values = np.abs(values.astype("i8")).astype(np_inner)
    mask = rng.integers(0, 3, 12) > 0
    chunks = {(0,): _optional_chunk(values[:8], mask[:8], np_inner),
              (1,): _optional_chunk(values[8:], mask[8:], np_inner)}
    data_type = {"name": "optional", "configuration": {"name": inner}}
    write_array(tmp_path, "v", data_type, [12], [8], OPTIONAL_CODECS, chunks, fill_value=None)
    out_type = np_inner if np_inner.kind == "f" else np.dtype("f8")
    want = values.astype(out_type)
    want[~mask] = np.nan
    check(tmp_path, "v", want)


def test_optional_fill_value_and_absent_chunks(tmp_path):
    values = np.array([1, 2, 3, 4], dtype="<i4")
    mask = np.array([True, False, True, True])
    data_type = {"name": "optional", "configuration": {"name": "int32"}}
    write_array(tmp_path, "v", data_type, [8], [4], OPTIONAL_CODECS, {(0,): _optional_chunk(values, mask, "<i4")},
                fill_value=[-9])
    check(tmp_path, "v", np.array([1, np.nan, 3, 4, -9, -9, -9, -9]))
    root = tmp_path / "null"
    write_array(root, "v", data_type, [8], [4], OPTIONAL_CODECS, {(0,): _optional_chunk(values, mask, "<i4")},
                fill_value=None)
    check(root, "v", np.array([1, np.nan, 3, 4] + [np.nan] * 4))


def test_optional_errors_are_clear(tmp_path):
    data_type = {"name": "optional", "configuration": {"name": "int32"}}
    arr = write_array(tmp_path, "v", data_type, [4], [4], OPTIONAL_CODECS,
                      {(0,): _optional_chunk(np.arange(4, dtype="<i4"), [True] * 4, "<i4")[:-3]}, fill_value=None)
    with pytest.raises(Exception, match="optional"):
        read(tmp_path, "v")
    root = tmp_path / "b"
    write_array(root, "v", data_type, [4], [4], [{"name": "bytes", "configuration": {"endian": "little"}}], {},
                fill_value=None)
    with pytest.raises(Exception, match="optional codec"):
        read(root, "v")
    assert arr.exists()


def test_convert_writes_struct_as_zarr_python_3_does(tmp_path):
    # A big-endian struct store converted: `bytes` without endian, the fields little-endian (the
    # layout zarr-python 3 writes), the fill value an object of field values; read back the same.
    records = _records(5)
    src = tmp_path / "src"
    write_array(src, "rec", STRUCT, [5], [5], [{"name": "bytes", "configuration": {"endian": "big"}}],
                {(0,): records.astype(RECORD.newbyteorder(">")).tobytes()},
                fill_value={"id": -1, "value": "NaN", "flag": 0})
    dst = tmp_path / "dst"
    lazycube.convert(str(src), str(dst), codec="none")
    meta = json.loads((dst / "rec" / "zarr.json").read_text())
    assert meta["codecs"] == [{"name": "bytes"}]
    assert meta["data_type"] == STRUCT
    # convert takes a fill value from _FillValue, which records have none of: the zero record.
    assert meta["fill_value"] == {"id": 0, "value": 0.0, "flag": 0}
    assert (dst / "rec" / "c" / "0").read_bytes() == records.tobytes()
    got = read(dst, "rec")
    for f in RECORD.names:
        np.testing.assert_array_equal(got[f], records[f])
