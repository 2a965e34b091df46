"""The Python examples run as users run them (a fresh interpreter, the built package on
PYTHONPATH) on the bundled sample, and print what they promise."""
import os
import subprocess
import sys

import pytest

from conftest import REPO, _PKG_ROOT, import_lazycube

import_lazycube()


def run_example(name, *args, timeout=240):
    env = dict(os.environ, PYTHONPATH=str(_PKG_ROOT), TQDM_DISABLE="1")
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "python" / name), *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_xarray_quickstart():
    out = run_example("xarray_quickstart.py", "data/era5_sample_v3.zarr")
    assert "t2m at noon, corner mean:" in out
    # 61 x 81 grid in 16 x 16 patches: 3 x 5 xbatcher batches
    assert "15 xbatcher-compatible batches" in out
    assert "stacked batch: (32, 3, 1, 32, 32) float32" in out


def check_learns(out):
    line = [l for l in out.splitlines() if l.startswith("steps 30")][0]
    first, last = (float(v) for v in line.split("loss ")[1].split(" ")[0:3:2])
    assert last < first, line  # the loss goes down
    return line


def test_train_era5_learns():
    out = run_example("train_era5.py", "data/era5_sample_v2.zarr", "--steps", "30", "--workers", "2",
                      "--device", "cpu")
    assert check_learns(out).endswith("on cpu")


def test_train_era5_learns_on_the_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch %s has no CUDA: the GPU run of the example is not exercised here" % torch.__version__)
    out = run_example("train_era5.py", "data/era5_sample_v2.zarr", "--steps", "30", "--device", "cuda")
    assert check_learns(out).endswith("on cuda")


def test_train_forecast_learns_with_rollout():
    out = run_example("train_forecast.py", "data/era5_sample_v2.zarr", "--epochs", "3")
    lines = [l for l in out.splitlines() if l.startswith("epoch ")]
    assert [l.split()[3] for l in lines] == ["1", "2", "3"]  # the rollout grows with the epochs
    first = float(lines[0].split("loss ")[1].split(" ")[0])
    last = float(lines[-1].split("-> ")[1])
    assert last < first, out
