"""scripts/setup.sh --target: run-sample.sh builds only what the main job needs (issue 16), in the
same configuration as the full build of scripts/test.sh (checked with --dry-run: nothing runs)."""
import subprocess

from conftest import REPO, SCRIPTS


def dry_run(tmp_path, *args):
    p = subprocess.run(["bash", str(SCRIPTS / "setup.sh"), "--dry-run", "--build-dir", str(tmp_path), *args],
                       capture_output=True, text=True, timeout=120, cwd=REPO)
    assert p.returncode == 0, p.stderr
    return [line for line in p.stderr.splitlines() if line.startswith("[setup] would run: cmake")]


def test_targets_build_only_those_in_the_same_configuration(tmp_path):
    partial = dry_run(tmp_path, "--target", "lazycube_cli", "--target=lazycube_python")
    full = dry_run(tmp_path)
    assert len(partial) == 2 and len(full) == 2
    assert partial[0] == full[0]  # the same configure command
    assert partial[1].endswith("cmake --build %s --target lazycube_cli lazycube_python" % tmp_path)
    assert full[1].endswith("cmake --build %s" % tmp_path)



def test_targets_leave_out_the_test_tools(tmp_path):
    """A build of chosen targets (run-sample.sh) does not install the tests' npm tools; the full
    build (test.sh) does, unless they are there already."""
    def npm_lines(*args):
        p = subprocess.run(["bash", str(SCRIPTS / "setup.sh"), "--dry-run", "--build-dir", str(tmp_path), *args],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
        assert p.returncode == 0, p.stderr
        return [line for line in p.stderr.splitlines() if "npm" in line]
    partial = npm_lines("--target", "lazycube_cli")
    assert partial and all("skipped" in line for line in partial), partial
    assert not any("skipped" in line for line in npm_lines())
