"""The Python package's layers (python/lazycube/_layers.py, docs/layers.md "Python package"):
every import statement of every module of python/lazycube -- at module level or inside a
function, relative or absolute -- names a module of a lower layer, every module has a layer, and
the imports form no cycle. Reads the sources with ``ast`` only: it needs no compiled module and
imports nothing of the package."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "lazycube"
NAME = "lazycube"  # the package itself: its __init__.py
COMPILED = ("_core",)  # modules of the package without a .py file


def declared_layers():
    """LAYERS of _layers.py, read without importing it."""
    tree = ast.parse((PACKAGE / "_layers.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["LAYERS"]:
            return ast.literal_eval(node.value)
    raise AssertionError("python/lazycube/_layers.py has no LAYERS")


def modules():
    """Module name -> source path: lazycube (its __init__.py) and every other .py file."""
    out = {}
    for path in sorted(PACKAGE.glob("*.py")):
        out[NAME if path.stem == "__init__" else path.stem] = path
    return out


def _target(dotted, known):
    """The package module an absolute dotted name denotes (lazycube.x.y -> x), else None."""
    parts = dotted.split(".")
    if parts[0] != NAME:
        return None
    return parts[1] if len(parts) > 1 and parts[1] in known else NAME


def imports(path, known):
    """(line, imported module) for every import of the package in the file, anywhere in it:
    ``import lazycube.x``, ``from lazycube[.x] import y``, ``from .[x] import y`` (y a module
    of the package or a name of x / of the package) and ``importlib.import_module`` of a
    constant name."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _target(alias.name, known)
                if target is not None:
                    out.append((node.lineno, target))
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: the package is the only level there is
                base = [NAME] + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == NAME:
                base = node.module.split(".")
            else:
                continue
            if len(base) > 1:
                out.append((node.lineno, _target(".".join(base), known)))
                continue
            for alias in node.names:  # from lazycube import x / from . import x
                out.append((node.lineno, alias.name if alias.name in known else NAME))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) \
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module":
            name = node.args[0].value
            target = _target(NAME + name if name.startswith(".") else name, known)
            if target is not None:
                out.append((node.lineno, target))
    return sorted(out)


def import_graph():
    """module -> {imported module: first line}, self-imports left out (``from lazycube import
    writing`` inside writing.py)."""
    found = modules()
    known = set(found) | set(COMPILED)
    graph = {}
    for name, path in found.items():
        edges = graph.setdefault(name, {})
        for line, target in imports(path, known):
            if target != name:
                edges.setdefault(target, line)
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_declared_layers_name_each_module_once():
    layers = declared_layers()
    names = [m for layer in layers for m in layer]
    twice = sorted({m for m in names if names.count(m) > 1})
    assert not twice, "python/lazycube/_layers.py places %s in several layers" % twice
    missing = sorted((set(modules()) | set(COMPILED)) - set(names))
    assert not missing, ("modules without a layer: %s -- add each to LAYERS in "
                         "python/lazycube/_layers.py, above everything it imports" % missing)
    gone = sorted(set(names) - set(modules()) - set(COMPILED))
    assert not gone, "python/lazycube/_layers.py names modules that do not exist: %s" % gone
    assert layers[-1] == (NAME,), "the package (__init__.py) is the top layer"


def test_no_module_imports_its_own_layer_or_one_above():
    level = {m: i for i, layer in enumerate(declared_layers()) for m in layer}
    bad = []
    for name, edges in sorted(import_graph().items()):
        for target, line in sorted(edges.items()):
            if name in level and target in level and level[target] >= level[name]:
                where = "its own layer" if level[target] == level[name] else "a layer above"
                bad.append("%s -> %s (python/lazycube/%s.py:%d imports %s)"
                           % (name, target, "__init__" if name == NAME else name, line, where))
    assert not bad, ("imports that point up (python/lazycube/_layers.py; move the code down or "
                     "the module up):\n  " + "\n  ".join(bad))


def test_the_imports_form_no_cycle():
    assert cycles(import_graph()) == []


def test_the_check_sees_hidden_imports(tmp_path):
    """The reader finds imports inside functions, relative and absolute, and import_module."""
    source = tmp_path / "m.py"
    source.write_text(
        "import os\n"
        "from . import _core, pipeline as p\n"
        "from .dataset import Dataset\n"
        "def f():\n"
        "    from .xarray_backend import source_of\n"
        "    import lazycube.torch\n"
        "    from lazycube import accessor, open_dataset\n"
        "    import importlib\n"
        "    importlib.import_module('.batch', 'lazycube')\n"
        "    return importlib.import_module('lazycube.sources')\n")
    known = {"_core", "pipeline", "dataset", "xarray_backend", "torch", "accessor", "batch",
             "sources"}
    assert imports(source, known) == [
        (2, "_core"), (2, "pipeline"), (3, "dataset"), (5, "xarray_backend"), (6, "torch"),
        (7, "accessor"), (7, NAME), (9, "batch"), (10, "sources")]
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]


if __name__ == "__main__":  # the import cycles of the tree as it is, for a quick look
    for component in cycles(import_graph()):
        print("cycle:", " ".join(component))
