"""Every level module (a module under gemmlab.kernels, in whatever folder, that registers ``SPECS``) keeps its
docstring to what changed, why and the prediction, with a pointer to its docs page: at most a third of the module's
lines, and every docs page it names exists."""
import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import gemmlab.kernels
from gemmlab.kernels.registry import list_kernels

ROOT = Path(__file__).resolve().parents[2]


def _level_modules():
    modules = []
    for info in pkgutil.walk_packages(gemmlab.kernels.__path__, "gemmlab.kernels."):
        if info.ispkg or info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        if getattr(module, "SPECS", None):
            modules.append(module)
    return modules


LEVELS = _level_modules()


def _docstring_share(module) -> tuple[int, int]:
    source = Path(module.__file__).read_text()
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str), \
        f"{module.__name__} has no module docstring"
    return first.end_lineno - first.lineno + 1, len(source.splitlines())


def test_the_walk_finds_every_registered_kernel():
    found = {id(spec) for module in LEVELS for spec in module.SPECS}
    missing = [spec.name for spec in list_kernels() if id(spec) not in found]
    assert not missing, f"registered by no module the walk found: {missing}"


@pytest.mark.parametrize("module", LEVELS, ids=lambda m: m.__name__.removeprefix("gemmlab.kernels."))
def test_docstring_is_at_most_a_third_of_the_module(module):
    doc, total = _docstring_share(module)
    assert 3 * doc <= total, (f"{module.__name__}: its docstring is {doc} of {total} lines; history and measured "
                              "figures belong on its docs page")


@pytest.mark.parametrize("module", LEVELS, ids=lambda m: m.__name__.removeprefix("gemmlab.kernels."))
def test_docs_pages_named_in_the_docstring_exist(module):
    for page in re.findall(r"docs/[\w./-]*\w", module.__doc__):
        assert (ROOT / page).exists(), f"{module.__name__} points to {page}, which does not exist"
