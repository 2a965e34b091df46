"""Engines are the format registry's formats (docs/formats.md, "How a URL is opened"): the CLI's
--engine and Python's engine= take every registered one, a forced engine reads without
recognition, and each format's options are checked by the format that owns them."""
import base64
import json

import numpy as np
import pytest
import xarray as xr

from conftest import import_lazycube, run_cli

ENGINES = ("kerchunk", "icechunk", "gdal", "zarr")


def _reference_set(path, values):
    """A kerchunk reference set (no .json suffix) holding `values` (int16, dim i) inline."""
    zarray = {"zarr_format": 2, "shape": [len(values)], "chunks": [len(values)], "dtype": "<i2",
              "compressor": None, "filters": None, "fill_value": None, "order": "C"}
    refs = {".zgroup": json.dumps({"zarr_format": 2}), ".zattrs": json.dumps({"title": "r"}),
            "x/.zarray": json.dumps(zarray), "x/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["i"]}),
            "x/0": "base64:" + base64.b64encode(np.asarray(values, "<i2").tobytes()).decode()}
    path.write_text(json.dumps({"version": 1, "refs": refs}))
    return path


def test_cli_engine_lists_and_takes_every_registered_format(lazycube_cli, tmp_path, era5):
    help_text = run_cli(lazycube_cli, "info", "--help").stdout
    for engine in ENGINES:
        assert engine in help_text
    refs = _reference_set(tmp_path / "refs.txt", [7, 9, -1])
    out = json.loads(run_cli(lazycube_cli, "info", refs, "--engine", "kerchunk", "--json").stdout)
    assert out["attrs"]["title"] == "r"
    zarr = json.loads(run_cli(lazycube_cli, "info", era5, "--engine", "zarr", "--json").stdout)
    auto = json.loads(run_cli(lazycube_cli, "info", era5, "--json").stdout)
    assert zarr == auto


def test_python_engine_names_a_format(tmp_path, era5):
    lazycube = import_lazycube()
    refs = _reference_set(tmp_path / "refs.txt", [7, 9, -1])
    ds = lazycube.open_dataset(str(refs), engine="kerchunk")
    assert ds["x"].values.tolist() == [7, 9, -1] and ds["x"].dtype == np.int16
    forced = lazycube.open_dataset(era5, engine="zarr").to_xarray().load()
    xr.testing.assert_identical(forced, xr.open_dataset(era5, engine="zarr"))
    with pytest.raises(lazycube.NotFoundError, match="no Icechunk repository"):
        lazycube.open_dataset(era5, engine="icechunk")
    with pytest.raises(lazycube.UsageError, match="unknown engine 'netcdf'.*'kerchunk'"):
        lazycube.open_dataset(era5, engine="netcdf")
    with pytest.raises(lazycube.UsageError, match="format option 'branch' = \"dev\" applies to Icechunk"):
        lazycube.open_dataset(era5, branch="dev")
