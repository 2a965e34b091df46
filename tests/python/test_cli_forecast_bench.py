"""`lazycube bench URL --forecast spec.json` on the bundled sample: the specification file's keys
are lazycube.ForecastSamples' keyword arguments, and the report's counts equal what
ForecastSamples gives for the same document."""
import json

import pytest

from conftest import DATA, CliError, import_lazycube, run_cli

lazycube = import_lazycube()

SPEC = {"inputs": ["t2m", "u10", "msl"], "targets": ["t2m"], "forcings": ["toa_incident_solar_radiation"],
        "input_offsets": ["-1h", "0h"], "target_offsets": ["1h", "2h", "3h"]}


def test_forecast_bench_reports_what_the_samples_hold(lazycube_cli, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    out = run_cli(lazycube_cli, "bench", DATA / "era5_sample_v2.zarr", "--forecast", spec, "--batch-size", "4",
                  "--shuffle", "chunk", "--rollout", "2", "--json").stdout
    r = json.loads(out.strip().splitlines()[-1])
    samples = lazycube.ForecastSamples(str(DATA / "era5_sample_v2.zarr"), index_dir="off", **SPEC)
    assert r["samples_per_epoch"] == len(samples) and r["samples"] == len(samples)
    assert r["excluded"] == samples.excluded and r["excluded"]["missing_values"] > 0
    assert r["batches"] == -(-len(samples) // 4) and r["rollout"] == 2
    assert r["samples_per_s"] > 0 and r["bytes_read"] > 0 and 0 < r["time_to_first_batch_s"] < 60
    # rollout 2 of 3 leads: the targets and forcings delivered shrink accordingly
    per_sample = 4 * 61 * 81 * (2 * 3 + 2 * 1 + (2 + 2) * 1)
    assert r["bytes_delivered"] == len(samples) * per_sample
    text = run_cli(lazycube_cli, "bench", DATA / "era5_sample_v2.zarr", "--forecast", spec, "--max-batches", "2").stdout
    assert "samples/s" in text and "first batch" in text


@pytest.mark.parametrize("args, message", [
    (["--variables", "t2m"], "--forecast takes its variables"),
    (["--rollout", "9"], "--rollout 9"),
])
def test_forecast_bench_usage_errors(lazycube_cli, tmp_path, args, message):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    with pytest.raises(CliError, match=message):
        run_cli(lazycube_cli, "bench", DATA / "era5_sample_v2.zarr", "--forecast", spec, *args)


def test_forecast_bench_names_a_bad_field(lazycube_cli, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(dict(SPEC, input_offsets=["yesterday"])))
    with pytest.raises(CliError, match="input_offsets\\[0\\]"):
        run_cli(lazycube_cli, "bench", DATA / "era5_sample_v2.zarr", "--forecast", spec)
