#!/usr/bin/env python3
"""Checks the layer rule (docs/layers.md) on every #include of src/ and include/lazycube/.

    python3 scripts/check_layers.py [--verbose]

A file may include
  * headers of its own layer and of the layers below it (the layers its CMake target links),
  * private headers (src/<folder>/*.hpp) of its own folder only, except the core layer's
    internal helpers in src/util/, included as "util/<name>.hpp" from any layer (every layer is
    above core); they are not installed, so no public header may include them.
Everything else fails with file:line, the include and the rule it breaks. Exit 0 when clean,
1 on a violation, 2 when the layer map itself is inconsistent.

The library layers, their folders and what each links are read from the top-level
CMakeLists.txt (the lazycube_add_layer() calls), so the map lives in one place; the adapters and
the top-level headers of include/lazycube/ are listed below. Tests, benchmarks and examples are
not checked: tests reach private headers on purpose.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The adapters at the edge: folder (or header) -> what they link (keep in step with the
# lazycube_link_layers()/target_link_libraries() of lazycube_cuda, lazycube_torch, _core and
# lazycube_cli). They must not know about each other, except that torch and python use cuda's
# pinned memory and transform.
ADAPTERS = {
    "cuda": {"paths": ["src/adapters/cuda/", "include/lazycube/adapters/cuda.hpp"], "depends": ["batch"]},
    "torch": {"paths": ["src/adapters/torch/", "include/lazycube/adapters/torch.hpp"], "depends": ["batch", "cuda"]},
    "python": {"paths": ["src/python/"], "depends": ["batch", "cuda"]},
    "cli": {"paths": ["src/cli/"], "depends": ["batch"]},
}
# Top-level headers of include/lazycube/ (no folder of their own): the layer each belongs to.
TOP_LEVEL_HEADERS = {
    "array.hpp": "core",
    "dtype.hpp": "core",
    "error.hpp": "core",
    "memory_array.hpp": "core",  # an Array over memory the caller owns (NumPy arrays)
    "chunk_grid.hpp": "core",  # chunk boundaries along each dim (regular or rectilinear)
    "concat_array.hpp": "core",  # arrays joined along one axis (multi-store datasets)
    "record_field_array.hpp": "core",  # one field of an array of records (struct data types)
    "unreadable_array.hpp": "core",  # an array a group lists but cannot read, and its error
    "ndarray.hpp": "core",
    "xtensor.hpp": "dataset",
    # The umbrella header: every library layer, as lazycube::lazycube links them.
    "lazycube.hpp": "lazycube",
}
UMBRELLA = "lazycube"

# Known violations waiting for a change that removes them: (file, include) -> why. The check
# fails when one of these no longer occurs, so the list cannot go stale.
KNOWN: dict = {}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_EXTS = (".cpp", ".hpp", ".h", ".cu", ".cuh")


def read_layers():
    """The lazycube_add_layer(<name> DIRS ... [DEPENDS ...]) calls of CMakeLists.txt."""
    text = open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8").read()
    text = re.sub(r"#[^\n]*", "", text)
    layers = {}
    for m in re.finditer(r"lazycube_add_layer\(\s*(\w+)\s+DIRS\s+([^)]*?)(?:\s+DEPENDS\s+([^)]*))?\)", text):
        name, dirs, deps = m.group(1), m.group(2).split(), (m.group(3) or "").split()
        layers[name] = {"dirs": dirs, "depends": [d.removeprefix("lazycube_") for d in deps]}
    if "core" not in layers:
        sys.exit("check_layers: no lazycube_add_layer() calls found in CMakeLists.txt")
    return layers


class LayerMap:
    def __init__(self):
        self.layers = read_layers()
        self.deps = {name: info["depends"] for name, info in self.layers.items()}
        for name, info in ADAPTERS.items():
            self.deps[name] = info["depends"]
        self.deps[UMBRELLA] = [n for n in self.layers]
        for name, deps in self.deps.items():
            for d in deps:
                if d not in self.deps:
                    sys.exit(f"check_layers: layer '{name}' depends on unknown layer '{d}'")
        # folder (relative to src/, "" for src/*.cpp) -> layer
        self.folders = {}
        for name, info in self.layers.items():
            for d in info["dirs"]:
                folder = d[len("src/"):] if d.startswith("src/") else ("" if d == "src" else None)
                if folder is None:
                    sys.exit(f"check_layers: layer '{name}' has a folder outside src/: {d}")
                self.folders[folder] = name
        self.closure = {name: self._below(name) for name in self.deps}

    def _below(self, name, seen=None):
        seen = set() if seen is None else seen
        for d in self.deps[name]:
            if d not in seen:
                seen.add(d)
                self._below(d, seen)
        return seen

    def layer_of(self, rel):
        """The layer of a repository-relative path, or None when it is in none."""
        for name, info in ADAPTERS.items():
            for p in info["paths"]:
                if rel == p or (p.endswith("/") and rel.startswith(p)):
                    return name
        parts = rel.split("/")
        if parts[0] == "include" and len(parts) >= 3 and parts[1] == "lazycube":
            if len(parts) == 3:
                return TOP_LEVEL_HEADERS.get(parts[2])
            return self.folders.get(parts[2])
        if parts[0] == "src":
            return self.folders.get("" if len(parts) == 2 else parts[1])
        return None


# The core layer's internal helpers: shared with every layer above (src/ is on the build tree's
# include path) but not installed.
SHARED_PRIVATE = "src/util"


def private_folder(rel):
    """For a private header (src/.../x.hpp), the folder that owns it; else None."""
    if rel.startswith("src/") and rel.endswith((".hpp", ".h", ".cuh")):
        return os.path.dirname(rel)
    return None


def private_header_allowed(owner, includer):
    if owner == os.path.dirname(includer):
        return True
    # A public header is installed without src/: it may not use a private one, util's included.
    return owner == SHARED_PRIVATE and includer.startswith("src/")


def resolve(includer, kind, name):
    """Repository-relative path of an include, or None when it is not a file of the project."""
    candidates = []
    if kind == '"':
        candidates.append(os.path.join(os.path.dirname(includer), name))
    candidates.append(os.path.join("include", name))
    if name.startswith("util/"):
        candidates.append(os.path.join("src", name))
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(ROOT, c)):
            return c
    return None


def project_files():
    for top in ("src", "include/lazycube"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in sorted(names):
                if n.endswith(SOURCE_EXTS):
                    yield os.path.relpath(os.path.join(dirpath, n), ROOT)


def main():
    verbose = "--verbose" in sys.argv[1:]
    lm = LayerMap()
    errors, seen_known, checked = [], set(), 0
    for rel in sorted(project_files()):
        layer = lm.layer_of(rel)
        if layer is None:
            errors.append(f"{rel}: in no layer: add its folder to a lazycube_add_layer() in CMakeLists.txt "
                          f"(or to ADAPTERS / TOP_LEVEL_HEADERS in scripts/check_layers.py)")
            continue
        allowed = lm.closure[layer] | {layer}
        with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                kind, name = m.groups()
                target = resolve(rel, kind, name)
                if target is None:
                    continue  # a system or third-party header
                checked += 1
                where = f'{rel}:{lineno}: #include {kind}{name}{">" if kind == "<" else chr(34)}'
                problem = None
                owner = private_folder(target)
                target_layer = lm.layer_of(target)
                if owner is not None and not private_header_allowed(owner, rel):
                    problem = (f"{target} is a private header of {owner}/ and only files there may include it "
                               f"(move it to include/lazycube/<layer>/ if it is that layer's interface)")
                elif target_layer is not None and target_layer not in allowed:
                    below = ", ".join(sorted(lm.closure[layer])) or "none"
                    problem = (f"{target} belongs to layer '{target_layer}', which layer '{layer}' must not use "
                               f"(it may use: {below})")
                if problem is None:
                    continue
                key = (rel, name)
                if key in KNOWN:
                    seen_known.add(key)
                    if verbose:
                        print(f"known: {where}: {KNOWN[key]}")
                    continue
                errors.append(f"{where}: {problem}")
    for key in sorted(set(KNOWN) - seen_known):
        errors.append(f"{key[0]}: the known violation #include \"{key[1]}\" is gone: remove it from KNOWN "
                      f"in scripts/check_layers.py")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"check_layers: {len(errors)} violation(s) of the layer rule (docs/layers.md)", file=sys.stderr)
        return 1
    print(f"check_layers: {checked} project includes follow the layer rule "
          f"({len(seen_known)} known exception(s), see KNOWN)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
