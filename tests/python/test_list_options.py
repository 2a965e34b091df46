"""List-valued storage options (issue 32, "Options"): `allowed_prefixes` takes the comma form and a
JSON list (`["a","b"]`), on the CLI (`--option allowed_prefixes=[...]`) and through Python's
storage_options; anything else that does not parse (a malformed JSON list, a non-string element, an
item that is not a URL prefix or path) is a usage error naming the option -- never the local path
`CWD/["http:/h/"]` it used to become. Run on a kerchunk reference set whose chunks live in a
directory outside the reference file's own (so reading needs allowed_prefixes)."""

import base64
import json
import subprocess

import numpy as np
import pytest

from conftest import import_lazycube


def cli(exe, *args, cwd=None):
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, cwd=cwd)


@pytest.fixture()
def refs(tmp_path):
    """(reference file, data dir, expected array): chunk 0 inline, chunks 1 and 2 in files of a
    data directory whose name holds a comma (only the JSON form can name it)."""
    x = np.arange(24, dtype="<i4").reshape(6, 4) * 3 - 7
    data = tmp_path / "data,2024"
    data.mkdir()
    for i in (1, 2):
        (data / ("part_%d.bin" % i)).write_bytes(x[2 * i:2 * i + 2].tobytes())
    (tmp_path / "refs").mkdir()
    zarray = {"chunks": [2, 4], "compressor": None, "dtype": "<i4", "fill_value": 0, "filters": None,
              "order": "C", "shape": [6, 4], "zarr_format": 2}
    doc = {"version": 1, "refs": {
        ".zgroup": json.dumps({"zarr_format": 2}),
        "x/.zarray": json.dumps(zarray),
        "x/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["r", "c"]}),
        "x/0.0": "base64:" + base64.b64encode(x[0:2].tobytes()).decode(),
        "x/1.0": [str(data / "part_1.bin"), 0, 32],
        "x/2.0": [str(data / "part_2.bin"), 0, 32],
    }}
    path = tmp_path / "refs" / "r.json"
    path.write_text(json.dumps(doc))
    return path, data, x


def test_cli_json_list_and_comma_form(refs, lazycube_cli, tmp_path):
    path, data, x = refs
    out = tmp_path / "x.npy"
    for value in (json.dumps([str(data)]), json.dumps(["http://h/", str(data) + "/"]),
                  '[ "%s" ]' % data, "*"):
        r = cli(lazycube_cli, "read", path, "x", "-o", out, "--option", "allowed_prefixes=" + value)
        assert r.returncode == 0, (value, r.stderr)
        np.testing.assert_array_equal(np.load(out), x)
        out.unlink()
    # the comma form splits the directory's name at its comma: refused, naming what was allowed
    r = cli(lazycube_cli, "read", path, "x", "-o", out, "--option", "allowed_prefixes=/nowhere,%s" % data)
    assert r.returncode == 1 and "refused" in r.stderr and "/nowhere" in r.stderr, r.stderr
    # a JSON list of URL prefixes is a list of URL prefixes (it used to be the local path
    # CWD/["http:/h/"]): the target is refused and the message lists http://h, no CWD path
    r = cli(lazycube_cli, "read", path, "x", "-o", out, "--option", 'allowed_prefixes=["http://h/"]', cwd=tmp_path)
    assert r.returncode == 1 and "refused" in r.stderr, r.stderr
    assert "http://h" in r.stderr and '["' not in r.stderr and str(tmp_path / "[") not in r.stderr, r.stderr


@pytest.mark.parametrize("value", ['["http://h/"', '["http://h/",]', "[http://h/]", "[1]", '["a", null]',
                                   '[""]', '"http://h/"', 'http://h/"]', "http:/h/", "s3:bucket/x", "http://",
                                   '{"a": "b"}'])
def test_cli_refuses_what_does_not_parse(refs, lazycube_cli, tmp_path, value):
    path, _, _ = refs
    for command in (["read", path, "x", "-o", tmp_path / "x.npy"], ["info", path]):
        r = cli(lazycube_cli, *command, "--option", "allowed_prefixes=" + value, cwd=tmp_path)
        assert r.returncode == 2, (value, r.returncode, r.stderr)
        assert "--option" in r.stderr and "storage option 'allowed_prefixes'" in r.stderr, r.stderr
    assert not (tmp_path / "x.npy").exists()


def test_python_storage_options(refs):
    lazycube = import_lazycube()
    path, data, x = refs
    # (a Python list is joined with commas by _options.normalize_storage_options, so it cannot
    # name this directory: the JSON text can)
    for value in (json.dumps([str(data)]), json.dumps(["s3://b/", str(data)]), '*'):
        ds = lazycube.open_dataset(str(path), storage_options={"allowed_prefixes": value})
        np.testing.assert_array_equal(ds["x"].read(), x)
    with pytest.raises(lazycube.StoreError, match="refused"):
        lazycube.open_dataset(str(path), storage_options={"allowed_prefixes": '["http://h/"]'})["x"].read()
    for value in ('["http://h/"', "[1]", "http:/h/", ["http:/h/"], ['["x"']):
        with pytest.raises(lazycube.UsageError, match="storage option 'allowed_prefixes'"):
            lazycube.open_dataset(str(path), storage_options={"allowed_prefixes": value})
