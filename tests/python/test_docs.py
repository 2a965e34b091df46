"""Every fenced code block in README.md and docs/*.md runs, so the documentation cannot go stale.

One test per block, named FILE:LINE (the line of its opening fence). By the block's language:

  python             run with this interpreter and the built package (PYTHONPATH as conftest's)
  bash, sh, console  run with bash -euo pipefail; `lazycube` on PATH is the built CLI
  cpp                compiled with g++ -std=c++20 -fsyntax-only -I include (a snippet without a
                     main() is wrapped in one, its #include lines hoisted)
  cmake              parsed by CMake (configured inside `if(FALSE)`: syntax only)
  json               parsed
  text               not code (synopses, diagrams, listings): reported as skipped

Every block runs in a fresh temporary directory holding a `data` link to the repository's data/
(so `data/era5_sample_v3.zarr` works and whatever a block writes is thrown away); TMPDIR points
there too. A block that cannot run here carries a marker on the line before its fence:

  <!-- doctest: skip (REASON) -->       reported as skipped with REASON
  <!-- doctest: cwd repo -->            run in the repository root instead (for blocks that
                                         only read files under it)
  <!-- doctest: needs shared-data -->   the shared test data (../shared/data, or
                                         LAZYCUBE_SHARED_DATA) linked as `shared`; skipped,
                                         with the reason, where it is absent

A block without a language is an error: name one.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, _cli_path, _staged_package_root

DOCS = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
MARKER = re.compile(r"^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
RUNNABLE = {"python", "bash", "sh", "console", "cpp", "cmake", "json", "text"}
TIMEOUT = 120


def _blocks(path):
    """(line, language, code, markers) of every fenced block in one Markdown file."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start, body = i + 1, []
        markers = []
        j = i - 1
        while j >= 0 and MARKER.match(lines[j]):
            markers.insert(0, MARKER.match(lines[j]).group(1))
            j -= 1
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence[0] * len(fence)):
            ln = lines[i]
            body.append(ln[len(indent):] if ln.startswith(indent) else ln.lstrip())
            i += 1
        i += 1
        out.append((start, lang, "\n".join(body) + "\n", markers))
    return out


def _cases():
    cases = []
    for path in DOCS:
        rel = path.relative_to(REPO).as_posix()
        for line, lang, code, markers in _blocks(path):
            cases.append(pytest.param(rel, line, lang, code, markers, id="%s:%d" % (rel, line)))
    return cases


def _env(workdir):
    env = dict(os.environ)
    env["TMPDIR"] = str(workdir)
    root = _staged_package_root()
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(root)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    bindir = workdir / ".bin"
    bindir.mkdir(exist_ok=True)
    cli = _cli_path()
    if cli.exists():
        (bindir / "lazycube").symlink_to(cli.resolve())
    env["PATH"] = str(bindir) + os.pathsep + env.get("PATH", "")
    env["LAZYCUBE_REPO"] = str(REPO)
    env.pop("LAZYCUBE_CACHE_DIR", None)
    return env


def _run(cmd, cwd, env, what):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        pytest.fail("%s failed (exit %d)\n--- stdout\n%s\n--- stderr\n%s"
                    % (what, proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:]))
    return proc


def _wrap_cpp(code):
    if re.search(r"\bint\s+main\s*\(", code):
        return code
    includes = [ln for ln in code.split("\n") if ln.startswith("#include")]
    rest = [ln for ln in code.split("\n") if not ln.startswith("#include")]
    return "\n".join(includes + ["#include <cstdint>", "int main() {"] + rest + ["}"]) + "\n"


@pytest.mark.parametrize("doc,line,lang,code,markers", _cases())
def test_doc_block(doc, line, lang, code, markers, tmp_path):
    for marker in markers:
        if not (marker.startswith("skip") or marker in ("cwd repo", "needs shared-data")):
            pytest.fail("%s:%d: unknown doctest marker %r" % (doc, line, marker))
        if marker.startswith("skip"):
            reason = marker[4:].strip().strip("()") or "marked skip"
            pytest.skip("%s:%d: %s" % (doc, line, reason))
    if not lang:
        pytest.fail("%s:%d: a code block without a language; name one (python, bash, cpp, cmake, "
                    "json, text) so the doc test knows how to run it" % (doc, line))
    if lang not in RUNNABLE:
        pytest.fail("%s:%d: the doc test cannot run a %r block; use one of %s or mark it "
                    "<!-- doctest: skip (reason) -->" % (doc, line, lang, sorted(RUNNABLE)))
    if lang == "text":
        pytest.skip("%s:%d: text block (not code)" % (doc, line))

    work = tmp_path / "work"
    work.mkdir()
    (work / "data").symlink_to(REPO / "data")
    if "needs shared-data" in markers:
        shared = Path(os.environ.get("LAZYCUBE_SHARED_DATA") or REPO.parent / "shared" / "data")
        if not shared.is_dir():
            pytest.skip("%s:%d: needs the shared data, not found at %s (set LAZYCUBE_SHARED_DATA)"
                        % (doc, line, shared))
        (work / "shared").symlink_to(shared.resolve())
    env = _env(work)
    cwd = REPO if "cwd repo" in markers else work
    what = "%s:%d (%s block)" % (doc, line, lang)

    if lang == "python":
        if _staged_package_root() is None and "lazycube" in code:
            if os.environ.get("LAZYCUBE_PYTHON_PACKAGE"):
                pytest.fail("LAZYCUBE_PYTHON_PACKAGE is set but the package was not found")
            pytest.skip("the lazycube Python package is not built")
        script = work / "block.py"
        script.write_text(code)
        _run([sys.executable, str(script)], cwd, env, what)
    elif lang in ("bash", "sh", "console"):
        if re.search(r"(^|[\s;&|(])lazycube\s", code) and not _cli_path().exists():
            if os.environ.get("LAZYCUBE_CLI"):
                pytest.fail("LAZYCUBE_CLI=%s does not exist" % _cli_path())
            pytest.skip("the lazycube CLI is not built")
        script = work / "block.sh"
        script.write_text(code)
        _run(["bash", "-euo", "pipefail", str(script)], cwd, env, what)
    elif lang == "cpp":
        compiler = shutil.which("g++") or shutil.which("c++")
        if compiler is None:
            pytest.skip("no C++ compiler")
        src = work / "block.cpp"
        src.write_text(_wrap_cpp(code))
        _run([compiler, "-std=c++20", "-fsyntax-only", "-I", str(REPO / "include"), str(src)],
             cwd, env, what)
    elif lang == "cmake":
        cmake = shutil.which("cmake")
        if cmake is None:
            pytest.skip("no cmake")
        proj = work / "proj"
        proj.mkdir()
        (proj / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.20)\nproject(doctest NONE)\nif(FALSE)\n%s\nendif()\n"
            % code)
        _run([cmake, "-S", str(proj), "-B", str(proj / "build")], cwd, env, what)
    elif lang == "json":
        import json
        try:
            json.loads(code)
        except ValueError as exc:
            pytest.fail("%s: not valid JSON: %s" % (what, exc))
