"""Hostile HTTP servers seen from Python (issue 32): an endless body or a lying Content-Length
ends a read with lazycube.StoreError (an OSError) instead of killing the interpreter."""
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import import_lazycube

lazycube = import_lazycube()

SERVER = Path(__file__).resolve().parents[1] / "servers" / "hostile_server.py"


@pytest.fixture
def hostile(tmp_path):
    proc = subprocess.Popen([sys.executable, str(SERVER), str(tmp_path)], stdout=subprocess.PIPE)
    port = int(proc.stdout.readline())
    yield "http://127.0.0.1:%d" % port
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.parametrize("kind", ["endless", "liar"])
def test_hostile_bodies_raise_store_error(hostile, kind):
    t0 = time.monotonic()
    with pytest.raises(lazycube.StoreError) as err:
        lazycube.open_dataset(hostile + "/%s/cube.zarr" % kind,
                              storage_options={"retries": 0, "max_response_bytes": 1 << 20})
    assert time.monotonic() - t0 < 20
    assert "/%s/cube.zarr" % kind in str(err.value)
    assert isinstance(err.value, OSError)
