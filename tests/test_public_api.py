"""The public API of ``stumplib``, fixed here: a change to it is a visible, reviewed step.

- :data:`PUBLIC`: each package's ``__all__``, name for name (order aside). Adding, removing or
  renaming a public name means editing this table in the same change;
- every package (a folder of ``stumplib``) is a regular package (an ``__init__.py``) with a module
  docstring that names each of its public names;
- every public name resolves to an object, and each public function takes at most
  :data:`MAX_PARAMETERS` parameters (larger settings travel in an object: :class:`stumplib.stump.Prior`,
  :class:`stumplib.phase.PhaseModel`, :class:`stumplib.stump.RunConfig` and the frozen options
  objects such as :class:`stumplib.stump.TrainOptions`, :class:`stumplib.phase.SolverOptions`);
- the public API lives in the packages: a module inside a package carries no ``__all__`` (its names
  are its package's business), apart from the modules in :data:`PENDING`;
- the distinct objects exported by all ``__all__`` lists together are at most :data:`MAX_EXPORTED`;
- the reference page documents every package of :data:`PUBLIC`;
- the science packages (:data:`SCIENCE`) carry no profile name and import nothing from the book:
  each chapter's grids and protocols live in :mod:`stumplib.book.studies`.
"""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "stumplib"

PUBLIC: dict[str, set[str]] = {
    "stumplib.stump": {
        "Prior", "DEFAULT_PRIOR", "sample_tasks", "sample_thresholds", "sample_contexts",
        "estimate", "attention_weights", "estimate_and_grad", "population_estimate",
        "population_error", "population_loss", "integrate_flow", "FlowResult", "FlowOptions",
        "population_gd", "RunConfig", "TrainOptions", "make_corpora", "train_gd", "TrainResult",
        "train_two_head", "erm_stump", "bayes_posterior_mean"},
    "stumplib.phase": {
        "PhaseModel", "check_model", "DEFAULT_A", "positional_encodings", "sample_teacher",
        "sample_tokens", "state_evolution", "SolverOptions", "StateEvolutionResult", "Outcome",
        "AccuracyNotReached", "StateEvolutionError", "se_update", "UpdateOptions",
        "test_error_from_overlaps", "solve_fixed_rule", "make_problem", "Problem",
        "minimiser_runs", "MinimiserOptions", "exact_test_error", "train_attention_gd",
        "AttentionGDOptions", "attention_test_error", "linear_baseline_test_error"},
    "stumplib.core": {
        "Estimate", "mean_interval", "bootstrap", "ratio_of_means", "fit_power_law", "PowerLawFit",
        "crossing", "check_int", "check_real", "check_prior", "check_grid", "resolve_device",
        "make_generator", "TrainingDiverged", "save_results", "load_results", "remember",
        "code_version"},
    "stumplib.core.stats": {
        "Estimate", "mean_interval", "bootstrap", "ratio_of_means", "two_way_ratio",
        "fit_power_law", "PowerLawFit", "fit_replicates", "crossing"},
    "stumplib.sweep": {
        "Task", "run_sweep", "SweepSummary", "Store", "read_store", "connect", "add_arguments",
        "check_arguments", "run"},
    "stumplib.book": {
        "start", "check_parameters", "settings", "show_settings", "table", "Chapter", "PROFILES",
        "glue_value", "glue_estimate", "glue_verdict", "typeset_reason", "cached",
        "prune_results"},
    "stumplib.book.sphinxext": {"setup"},
}
#: packages without public names of their own (``import stumplib.book.plots as ...`` by module)
NO_PUBLIC_NAMES = ("stumplib", "stumplib.book.plots", "stumplib.book.sections",
                   "stumplib.book.studies")
#: modules that still carry an ``__all__`` of their own (none left); nothing may be added here
PENDING: set[str] = set()
#: the most parameters a public function takes
MAX_PARAMETERS = 8
#: public functions still over :data:`MAX_PARAMETERS` (none left: issue 48, part 2 folded them into
#: the model objects and options objects); nothing may be added here
OVER_MAX: set[str] = set()
#: the most distinct objects all ``__all__`` lists may export together
MAX_EXPORTED = 95


def _packages() -> list[str]:
    dirs = [PACKAGE] + sorted(p for p in PACKAGE.rglob("*") if p.is_dir()
                              and "__pycache__" not in p.parts and any(p.glob("*.py")))
    return [".".join(("stumplib",) + d.relative_to(PACKAGE).parts) for d in dirs]


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _has_all(path: Path) -> bool:
    return any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                 for t in n.targets)
               for n in ast.parse(path.read_text()).body)


@pytest.mark.parametrize("pkg", _packages())
def test_every_package_is_a_regular_package_with_a_docstring(pkg):
    init = PACKAGE.joinpath(*pkg.split(".")[1:], "__init__.py")
    assert init.is_file(), f"{pkg} has no __init__.py (a namespace package)"
    doc = importlib.import_module(pkg).__doc__
    assert doc and doc.strip(), f"{pkg} has no docstring"
    assert pkg in PUBLIC or pkg in NO_PUBLIC_NAMES, f"{pkg}: add its public names to PUBLIC"


@pytest.mark.parametrize("pkg", sorted(PUBLIC))
def test_the_public_names_are_the_reviewed_ones(pkg):
    mod = importlib.import_module(pkg)
    got = list(getattr(mod, "__all__", []))
    assert len(got) == len(set(got)), f"{pkg}.__all__ names a name twice"
    assert set(got) == PUBLIC[pkg], (f"{pkg}.__all__ changed: added {sorted(set(got) - PUBLIC[pkg])}, "
                                     f"removed {sorted(PUBLIC[pkg] - set(got))}")
    for name in got:
        assert hasattr(mod, name), f"{pkg}.{name} does not exist"
        assert f"`{name}`" in mod.__doc__, f"{pkg}'s docstring does not name {name}"


@pytest.mark.parametrize("pkg", sorted(PUBLIC))
def test_no_public_function_takes_more_than_a_few_parameters(pkg):
    mod = importlib.import_module(pkg)
    over = []
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.isfunction(obj) and f"{pkg}.{name}" not in OVER_MAX:
            n = len(inspect.signature(obj).parameters)
            if n > MAX_PARAMETERS:
                over.append(f"{pkg}.{name}: {n} parameters")
    assert not over, "\n".join(over)


def test_modules_inside_a_package_carry_no_all():
    found = sorted(p.relative_to(ROOT).as_posix() for p in _modules()
                   if p.name != "__init__.py" and _has_all(p))
    extra = [p for p in found if p not in PENDING]
    assert not extra, f"modules with their own __all__ (the package's __all__ is the API): {extra}"


def test_the_exported_objects_are_few():
    seen = set()
    for p in _modules():
        if not _has_all(p):
            continue
        name = ".".join(("stumplib",) + p.relative_to(PACKAGE).with_suffix("").parts)
        mod = importlib.import_module(name.removesuffix(".__init__"))
        for n in mod.__all__:
            obj = getattr(mod, n)
            simple = isinstance(obj, (int, float, str, bytes, tuple, frozenset, type(None)))
            seen.add(("value", n, repr(obj)) if simple else id(obj))
    assert len(seen) <= MAX_EXPORTED, f"{len(seen)} distinct objects in __all__ lists"


def test_the_reference_page_documents_every_package():
    text = (ROOT / "reference.md").read_text()
    for pkg in PUBLIC:
        assert f"automodule:: {pkg}\n" in text, f"reference.md does not document {pkg}"
        for name in PUBLIC[pkg]:
            assert f"`{name}" in text, f"reference.md gives no example of {pkg}.{name}"


#: the packages a researcher imports into their own work
SCIENCE = ("core", "stump", "phase")
#: the book's profile names (:data:`stumplib.book.PROFILES`)
PROFILE_NAMES = ("smoke", "quick", "full")


@pytest.mark.parametrize("pkg", SCIENCE)
def test_the_science_packages_hold_no_profile_names_and_no_book_imports(pkg):
    from stumplib.book import PROFILES
    assert set(PROFILES) == set(PROFILE_NAMES)
    bad = []
    for path in sorted((PACKAGE / pkg).rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Constant) and node.value in PROFILE_NAMES:
                bad.append(f"{where}: profile name {node.value!r}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stumplib.book"):
                bad.append(f"{where}: imports {node.module}")
            if isinstance(node, ast.Import) and any(a.name.startswith("stumplib.book")
                                                    for a in node.names):
                bad.append(f"{where}: imports the book")
    assert not bad, "\n".join(bad)
