"""Packaging: the extras, what the controller and hub import, the CLI's answer when an extra is
missing, ``--version``, the image lock and the image name the manifests use (issue 16)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from functools import cache
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PLOTTING = ("matplotlib", "pandas")

#: Run the CLI with some packages made unimportable, as in an environment without their extra.
_WITHOUT = """
import sys
sys.modules.update(dict.fromkeys(sys.argv[1].split(",")))
from carbonshift.cli.app import main
sys.exit(main(sys.argv[2:]))
"""


@cache  # one interpreter per module serves both import tests
def _imported_by(module: str) -> frozenset[str]:
    """The top-level modules a fresh interpreter holds after importing ``module``."""
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return frozenset(json.loads(done.stdout))


def _cli_without(blocked: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT, blocked, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=REPO,
    )


def _name(requirement: str) -> str:
    """The normalised project name of a requirement string (``fastapi>=0.110`` -> fastapi)."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


SERVER_MODULES = [
    pytest.param("carbonshift.cli.controller", id="the controller command"),
    pytest.param("carbonshift.cli.hub", id="the hub command"),
    pytest.param("carbonshift.k8s.app", id="the controller application"),
    pytest.param("carbonshift.k8s.multicluster.hub", id="the hub reconciler"),
    pytest.param("carbonshift.api.app", id="the HTTP advice service"),
]


@pytest.mark.parametrize("module", SERVER_MODULES)
def test_servers_import_nothing_from_the_plotting_stack(module: str) -> None:
    loaded = _imported_by(module)
    assert module in loaded
    assert sorted(p for p in PLOTTING if p in loaded) == []


@cache
def _cli_imports(*args: str) -> frozenset[str]:
    """The modules a fresh interpreter holds after ``carbonshift ARGS`` (run by ``main``)."""
    code = (
        "import json, sys\n"
        "from carbonshift.cli.app import main\n"
        "code = main(sys.argv[1:])\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    return frozenset(json.loads(done.stderr.strip().splitlines()[-1]))


def test_the_cli_imports_the_plotting_stack_only_to_draw() -> None:
    # the root's --help registers every verb; matplotlib (0.4-0.6 s) waits for a figure
    loaded = _cli_imports("--help")
    assert "carbonshift.sim.reproduce" in loaded
    assert "carbonshift.sim.sweep" in loaded
    assert sorted(p for p in PLOTTING if p in loaded) == []


@pytest.mark.parametrize(
    ("args", "verb_module", "not_loaded"),
    [
        pytest.param(
            ("data", "--help"),
            "carbonshift.cli.data",
            ("carbonshift.planning", "carbonshift.sim", "carbonshift.k8s", "fastapi"),
            id="data: no planner, simulator, web stack or Kubernetes client",
        ),
        pytest.param(
            ("plan", "--help"),
            "carbonshift.cli.plan",
            ("carbonshift.sim", "carbonshift.k8s", "fastapi", "kubernetes_asyncio"),
            id="plan: no simulator, web stack or Kubernetes client",
        ),
        pytest.param(
            ("--version",),
            "carbonshift.cli.app",
            ("carbonshift.cli.plan", "carbonshift.planning"),
            id="--version: no verb",
        ),
    ],
)
def test_a_run_imports_only_the_verb_it_names(
    args: tuple[str, ...], verb_module: str, not_loaded: tuple[str, ...]
) -> None:
    loaded = _cli_imports(*args)
    assert verb_module in loaded
    assert sorted(m for m in not_loaded if m in loaded) == []


#: True while the controller still takes the weekly replay from the simulator.
_REPLAY_IN_SIM = (
    "from carbonshift.sim" in (REPO / "src" / "carbonshift" / "k8s" / "planner.py").read_text()
)


@pytest.mark.xfail(
    _REPLAY_IN_SIM,
    strict=True,
    reason=(
        "k8s.planner imports carbonshift.sim.experiment for the weekly replay "
        "(extend_by_replay); the grid issue moves it into carbonshift.carbon"
    ),
)
@pytest.mark.parametrize("module", SERVER_MODULES[:4])
def test_the_controller_and_hub_import_nothing_from_the_simulator(module: str) -> None:
    assert sorted(m for m in _imported_by(module) if m.startswith("carbonshift.sim")) == []


CLI_WITHOUT_EXTRA = [
    pytest.param(
        "matplotlib,pandas",
        ["simulate", "examples/caspian.toml", "--out", "unused"],
        "carbonshift[sim]",
        id="simulate without the plotting stack names carbonshift[sim] before running",
    ),
    pytest.param(
        "matplotlib,pandas",
        ["sweep", "examples/sweep-caspian.toml"],
        "carbonshift[sim]",
        id="sweep cannot even load: its stand-in names carbonshift[sim]",
    ),
    pytest.param(
        "fastapi,uvicorn",
        ["serve"],
        "carbonshift[api]",
        id="the HTTP service names carbonshift[api]",
    ),
    pytest.param(
        "fastapi,uvicorn",
        ["controller", "--check", "--config", "deploy/base/config.yaml"],
        "carbonshift[k8s]",
        id="the controller names carbonshift[k8s], which brings its web servers too",
    ),
    pytest.param(
        "kubernetes_asyncio",
        ["hub", "--once", "--kubeconfig", "unused"],
        "carbonshift[k8s]",
        id="the hub without a Kubernetes client names carbonshift[k8s]",
    ),
]


@pytest.mark.parametrize(("blocked", "args", "want_extra"), CLI_WITHOUT_EXTRA)
def test_a_verb_without_its_extra_names_the_extra_to_install(
    blocked: str, args: list[str], want_extra: str
) -> None:
    done = _cli_without(blocked, *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ")
    assert f"install {want_extra}" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_controller_checks_its_configuration_without_the_plotting_stack() -> None:
    # What `carbonshift controller --check` does inside the image, which has no [sim].
    done = _cli_without(
        "matplotlib,pandas", "controller", "--check", "--config", "deploy/base/config.yaml"
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"^policy\s+carbonshift$", done.stdout, re.MULTILINE)


def test_the_help_lists_a_verb_whose_extra_is_missing() -> None:
    done = _cli_without("matplotlib,pandas", "--help")
    assert done.returncode == 0, done.stderr
    assert "carbonshift[sim]" in done.stdout


def test_version_prints_the_installed_distribution_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "carbonshift.cli", "--version"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"carbonshift {version('carbonshift')}\n"


def test_the_core_leaves_plotting_servers_and_kubernetes_to_extras() -> None:
    core = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert core == {"numpy", "scipy", "highspy", "pydantic", "typer", "rich", "httpx", "pyyaml"}
    assert {_name(r) for r in extras["sim"]} == {"matplotlib", "pandas"}
    assert {"fastapi", "uvicorn"} <= {_name(r) for r in extras["api"]}
    assert {"kubernetes-asyncio", "prometheus-client", "fastapi", "uvicorn"} <= {
        _name(r) for r in extras["k8s"]
    }
    assert extras["all"] == ["carbonshift[sim,api,k8s]"]
    assert "carbonshift[all]" in extras["dev"]  # make test installs .[dev]


def test_the_image_lock_pins_every_runtime_requirement_with_hashes() -> None:
    lock = (REPO / "requirements" / "image.lock").read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", lock, re.MULTILINE))
    pinned = {_name(name) for name in pins}
    extras = PYPROJECT["project"]["optional-dependencies"]
    wanted = [*PYPROJECT["project"]["dependencies"], *extras["k8s"], *extras["api"]]
    assert sorted({_name(r) for r in wanted} - pinned) == []
    assert not pinned & {"matplotlib", "pandas", "carbonshift"}
    hashes = dict(
        re.findall(r"^([A-Za-z0-9._-]+)==\S+((?:[ \\\n]+--hash=sha256:[0-9a-f]{64})*)", lock, re.M)
    )
    assert hashes.keys() == pins.keys()
    assert sorted(name for name, found in hashes.items() if not found) == []


def test_the_k8s_extra_and_the_image_bring_orjson() -> None:
    # the client parses every answer and watch event with it (carbonshift.k8s.client.
    # parse_json; bench/controller.md, 2026-11-27): a dependency, not an accident of the venv
    k8s = {_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["k8s"]}
    assert "orjson" in k8s
    lock = (REPO / "requirements" / "image.lock").read_text()
    assert re.search(r"^orjson==\S+ \\\n +--hash=sha256:", lock, re.MULTILINE)


def test_the_manifests_name_the_image_the_build_produces() -> None:
    build = (REPO / "image" / "build.sh").read_text()
    match = re.search(r'^IMAGE_NAME="\$\{IMAGE_NAME:-([^}]+)\}"', build, re.MULTILINE)
    assert match is not None, "image/build.sh sets IMAGE_NAME"
    want_image = {"newName": match.group(1), "newTag": PYPROJECT["project"]["version"]}
    for bundle in ("base", "hub"):
        path = REPO / "deploy" / bundle / "kustomization.yaml"
        kustomization = yaml.safe_load(path.read_text())
        images = {i["name"]: i for i in kustomization["images"]}
        assert {k: images["carbonshift"][k] for k in want_image} == want_image, bundle


def test_the_image_has_one_recipe_and_the_docs_name_it() -> None:
    # image/Containerfile (built by buildah, make image) is the only one; the old
    # deploy/Dockerfile built another image and is gone, and nothing may point at it.
    recipes = [
        p.relative_to(REPO).as_posix()
        for pattern in ("Dockerfile*", "Containerfile*")
        for p in REPO.rglob(pattern)
        if not {".git", ".venv"} & set(p.relative_to(REPO).parts)
    ]
    assert recipes == ["image/Containerfile"]
    texts = [REPO / "README.md", *(REPO / "docs").rglob("*.md"), *(REPO / "deploy").rglob("*")]
    stale = [
        p.relative_to(REPO).as_posix()
        for p in texts
        if p.is_file() and "Dockerfile" in p.read_text()
    ]
    assert stale == []
