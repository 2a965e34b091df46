"""zarr_implementations' astronaut arrays against the pixels of reference_image.png itself.

The PNG is decoded with GDAL's own command-line tool (gdal_translate to raw ENVI, pixel
interleaved), independently of the .npy shipped with the fixtures.
"""
import shutil
import subprocess

import numpy as np
import pytest

from conftest import read_npy

ARRAYS = ["raw", "gzip", "zlib", "blosc"]


@pytest.fixture(scope="module")
def png_pixels(shared_data, tmp_path_factory):
    if shutil.which("gdal_translate") is None:
        pytest.skip("gdal_translate (gdal-bin) is not installed")
    png = shared_data / "zarr-fixtures" / "zarr_implementations" / "reference_image.png"
    if not png.exists():
        pytest.skip(f"{png} is absent")
    out = tmp_path_factory.mktemp("png") / "pixels.raw"
    subprocess.run(["gdal_translate", "-q", "-of", "ENVI", "-co", "INTERLEAVE=BIP", str(png), str(out)], check=True)
    return np.fromfile(out, dtype=np.uint8).reshape(512, 512, 3)  # (y, x, rgb) like the Zarr arrays


@pytest.mark.parametrize("name", ARRAYS)
def test_astronaut_matches_png(lazycube_cli, shared_data, png_pixels, tmp_path, name):
    store = shared_data / "zarr-fixtures" / "zarr_implementations" / "zarr.zr" / name
    got = read_npy(lazycube_cli, str(store), tmp_path, raw=True)
    assert got.dtype == np.uint8 and got.shape == (512, 512, 3)
    np.testing.assert_array_equal(got, png_pixels)
