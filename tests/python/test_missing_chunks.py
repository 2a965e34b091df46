"""missing_chunks="fill" | "error" (issue 34): the bundled v2 sample with one t2m chunk deleted.
"fill" (the default) reads as xarray's zarr engine does; "error" raises lazycube.MissingDataError
naming the chunk through lazycube.open_dataset, xarray's engine, the CLI (--missing-chunks
error) and the torch datasets; a NetCDF file refuses "error" (GDAL has no chunks to miss)."""
import shutil

import numpy as np
import pytest
import xarray as xr

from conftest import CliError, import_lazycube, run_cli

lazycube = import_lazycube()


@pytest.fixture(scope="module")
def holed(sample_dir, tmp_path_factory):
    """The v2 sample with t2m's chunk 1.0.0 (time 24-47, latitude 0-39, longitude 0-39) deleted."""
    path = tmp_path_factory.mktemp("holed") / "era5.zarr"
    shutil.copytree(sample_dir / "era5_sample_v2.zarr", path)
    (path / "t2m" / "1.0.0").unlink()
    return str(path)


def test_fill_reads_as_xarrays_zarr_engine(holed):
    expected = xr.open_dataset(holed, engine="zarr", consolidated=False)["t2m"].values
    assert np.isnan(expected[24:48, 0:40, 0:40]).all() and not np.isnan(expected[0:24]).any()
    for missing in ({}, {"missing_chunks": "fill"}):
        got = xr.open_dataset(holed, engine="lazycube", **missing)["t2m"].values
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(np.asarray(lazycube.open_dataset(holed, **missing)["t2m"].read()), expected)


def test_error_names_the_chunk_and_spares_reads_beside_it(holed):
    ds = xr.open_dataset(holed, engine="lazycube", missing_chunks="error")
    with pytest.raises(lazycube.MissingDataError, match=r"chunk 't2m/1\.0\.0'.*missing_chunks"):
        ds["t2m"].values
    expected = xr.open_dataset(holed, engine="zarr", consolidated=False)["t2m"]
    np.testing.assert_array_equal(ds["t2m"].isel(time=slice(0, 24)).values, expected.isel(time=slice(0, 24)).values)
    native = lazycube.open_dataset(holed, missing_chunks="error")
    with pytest.raises(lazycube.MissingDataError, match=r"1\.0\.0"):
        native["t2m"].read()
    assert "missing_chunks='error'" in repr(native.source)


def test_bad_values_and_formats_without_chunks(holed, tmp_path):
    with pytest.raises(ValueError, match="missing_chunks"):
        lazycube.open_dataset(holed, missing_chunks="skip")
    nc = tmp_path / "t.nc"
    xr.Dataset({"v": (("x",), np.arange(3.0))}).to_netcdf(nc)
    with pytest.raises(lazycube.UsageError, match="missing_chunks"):
        lazycube.open_dataset(str(nc), missing_chunks="error")
    # "fill" is what every format does: no error.
    lazycube.open_dataset(str(nc), missing_chunks="fill")


def test_cli_flag(lazycube_cli, holed, tmp_path):
    out = tmp_path / "ok.npy"
    run_cli(lazycube_cli, "read", holed, "t2m", "--output", out)
    assert np.isnan(np.load(out)[24:48, 0:40, 0:40]).all()
    with pytest.raises(CliError, match=r"t2m/1\.0\.0"):
        run_cli(lazycube_cli, "read", holed, "t2m", "--missing-chunks", "error", "--output", out)
    run_cli(lazycube_cli, "read", holed, "t2m", "--missing-chunks", "error", "--isel", "time=0:24",
            "--output", out)
    with pytest.raises(CliError, match="missing-chunks"):
        run_cli(lazycube_cli, "info", holed, "--missing-chunks", "skip")


def test_torch_datasets(holed):
    pytest.importorskip("torch")
    import lazycube.torch as lctorch

    dims = {"time": 8, "latitude": 16, "longitude": 16}
    fill = lctorch.BatchDataset(holed, input_dims=dims, batch_size=8, variables=["t2m"])
    assert sum(1 for _ in fill) > 0
    strict = lctorch.BatchDataset(holed, input_dims=dims, batch_size=8, variables=["t2m"], missing_chunks="error")
    with pytest.raises(lazycube.MissingDataError, match=r"1\.0\.0"):
        for _ in strict:
            pass
    with pytest.raises(lazycube.MissingDataError, match=r"1\.0\.0"):
        forecast = lctorch.ForecastDataset(holed, batch_size=4, inputs=["t2m"], targets=["t2m"],
                                           input_offsets=["0h"], target_offsets=["1h"], missing_chunks="error")
        for _ in forecast:
            pass
