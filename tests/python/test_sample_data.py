"""The bundled sample (data/) is valid, self-consistent and reproducible by its generator."""

import filecmp
import os
import subprocess
import sys

import numpy as np
import pytest
import zarr

import check_sample
import make_sample
from conftest import run_cli

SAMPLES = ["era5_sample_v2.zarr", "era5_sample_v3.zarr"]


def _files(root):
    out = []
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            out.append(os.path.relpath(os.path.join(dirpath, n), root))
    return sorted(out)


def test_crc32c_check_values():
    # Standard CRC-32C check value and two RFC 3720 (iSCSI) vectors.
    assert make_sample.crc32c(b"123456789") == 0xE3069283
    assert make_sample.crc32c(bytes(32)) == 0x8A9136AA
    assert make_sample.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert make_sample.crc32c(b"") == 0


def test_committed_sample_checks_out(sample_dir):
    # Both copies decode to identical values; metadata agrees; CF decoding works.
    assert check_sample.check(str(sample_dir)) == 0


def test_sample_is_small(sample_dir):
    total = sum(os.path.getsize(os.path.join(sample_dir, s, f))
                for s in SAMPLES for f in _files(os.path.join(sample_dir, s)))
    assert total <= 5_000_000, total


def test_generator_is_deterministic(sample_dir, tmp_path):
    # Regenerate in a subprocess (fresh interpreter, as a user would) and compare every byte.
    subprocess.run([sys.executable, str(make_sample.__file__), str(tmp_path)], check=True,
                   stdout=subprocess.DEVNULL)
    for s in SAMPLES:
        committed, fresh = os.path.join(sample_dir, s), os.path.join(tmp_path, s)
        assert _files(committed) == _files(fresh), s
        _match, mismatch, errors = filecmp.cmpfiles(committed, fresh, _files(committed), shallow=False)
        assert not mismatch and not errors, "%s: regenerated files differ: %s" % (s, mismatch + errors)


@pytest.mark.parametrize("sample", SAMPLES)
def test_cli_info(lazycube_cli, sample_dir, sample):
    out = run_cli(lazycube_cli, "info", sample_dir / sample).stdout
    for name in ("t2m", "u10", "v10", "msl", "time", "latitude", "longitude"):
        assert name in out


@pytest.mark.parametrize("sample", SAMPLES)
def test_cli_read_raw_matches_zarr(cli_read, sample_dir, sample):
    expected = zarr.open_consolidated(str(sample_dir / SAMPLES[0]), mode="r")["t2m"][0:24, 10:50, 5:45]
    got = cli_read(str(sample_dir / sample), "t2m",
                   isel=["time=0:24", "latitude=10:50", "longitude=5:45"], raw=True)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
