"""lazycube.to_zarr of an xarray Dataset built from variables the lazycube engine opened: their
encoding carries where they were read from (``lazycube_source``), which is not CF and must not
reach the encoder (it failed with "cannot convert a Python Source to JSON"). The written store
must read back as xarray's own zarr engine wrote it."""
import warnings

import numpy as np
import xarray as xr

from conftest import DATA, import_lazycube

lazycube = import_lazycube()


def test_to_zarr_of_variables_from_the_engine(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = xr.open_dataset(DATA / "era5_sample_v3.zarr", engine="lazycube")
    assert "lazycube_source" in src["latitude"].encoding
    rng = np.random.default_rng(3)
    new = xr.Dataset({"pred": (("latitude", "longitude"),
                               rng.normal(size=(src.sizes["latitude"], src.sizes["longitude"])).astype("f4"))},
                     coords={"latitude": src["latitude"], "longitude": src["longitude"]})
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    lazycube.to_zarr(new, str(ours), format=2)  # zarr-python 2 reads it back
    new_plain = new.copy()
    for v in new_plain.variables.values():
        v.encoding = {k: x for k, x in v.encoding.items() if k != "lazycube_source"}
    new_plain.to_zarr(theirs)
    with xr.open_zarr(ours, consolidated=False) as a, xr.open_zarr(theirs) as b:
        xr.testing.assert_identical(a.load(), b.load())
