"""The house rules that code review keeps forgetting: layers point one way, modules stay small,
and importing the service does nothing (no settings read, no logging set up, no threads)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "app"

#: Who may import whom: a package imports its own rank or lower (api → runs → graph → services → base).
RANK = {
    "schemas": 0, "config": 0, "agent_settings": 0, "console_settings": 0, "runtime": 0, "observability": 0, "texts": 0,
    "llm": 1, "agents": 1, "persistence": 1, "clients": 1,
    "graph": 2, "correction": 2, "chat": 2, "kb": 2,
    "runs": 3,
    "api": 4, "health": 4,
    "main": 5, "lifespan": 5, "serve": 5,  # the composition root and its launcher
    "dev": 6,  # development launchers: nothing in production imports them
}
#: The terminal client is a program of its own that speaks HTTP to the service; it shares the
#: wire models and reads approvals the way the service will (so it can say what an answer means).
CLI_MAY_IMPORT = {"schemas", "config", "agent_settings", "console_settings", "runtime", "observability", "cli",
                  "graph.rules.approval", "texts.clip"}
MAX_LINES = 400


def _modules() -> list[Path]:
    return sorted(APP.rglob("*.py"))


def _imports(path: Path) -> list[str]:
    """Every `app.*` module this file imports, including imports inside functions and TYPE_CHECKING."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return [name for name in found if name.startswith("app.")]


def _layer(path: Path) -> str:
    return path.relative_to(APP).with_suffix("").parts[0]


def test_every_package_is_placed_in_a_layer() -> None:
    layers = {_layer(path) for path in _modules()} - {"__init__"}
    assert layers <= set(RANK) | {"cli"}, f"place {sorted(layers - set(RANK) - {'cli'})} in RANK"


def test_imports_point_down_the_layers() -> None:
    upward = []
    for path in _modules():
        layer = _layer(path)
        for name in _imports(path):
            target = name.split(".")[1]
            if layer == "cli":
                module = name.removeprefix("app.")
                if not any(module == allowed or module.startswith(f"{allowed}.") for allowed in CLI_MAY_IMPORT):
                    upward.append(f"{path.relative_to(REPO)} imports {name}")
            elif layer != "__init__" and target != layer and RANK[target] > RANK[layer]:
                upward.append(f"{path.relative_to(REPO)} imports {name}")
    assert upward == []


def test_no_module_imports_another_packages_private_module() -> None:
    """A `_`-prefixed module is its package's own: what others need lives in a public module."""
    private = []
    for path in _modules():
        package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
        for name in _imports(path):
            parts = name.split(".")
            if any(part.startswith("_") and not part.startswith("__") for part in parts) and \
                    ".".join(parts[:-1]) != package:
                private.append(f"{path.relative_to(REPO)} imports {name}")
    assert private == []


def test_the_graphs_rules_run_without_langgraph() -> None:
    """app/graph/rules holds pure decisions: importing all of them loads no LangGraph."""
    rules = (APP / "graph" / "rules").glob("*.py")
    modules = sorted(f"app.graph.rules.{p.stem}" for p in rules if p.stem != "__init__")
    probe = ("import importlib, sys, json\n"
             f"for name in {modules!r}: importlib.import_module(name)\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('langgraph', 'langchain_core'))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,
                                       check=True, timeout=120).stdout)
    assert len(modules) >= 10 and loaded == []


def test_the_state_is_read_through_its_parts() -> None:
    """A key's default is declared once, beside its field in app/graph/state_access.py: no module
    reads a state key with a default of its own (`state.get("attempt", 1)`), nor by name at all."""
    reads = [f"{path.relative_to(REPO)}:{node.lineno}" for path in _modules() if path.name != "state_access.py"
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
             and isinstance(node.func.value, ast.Name) and node.func.value.id == "state"
             and (len(node.args) > 1 or (node.args and isinstance(node.args[0], ast.Constant)
                                         and node.args[0].value not in ("task", "language")))]
    assert reads == []


def test_text_is_shortened_one_way() -> None:
    """One `clip` (app/texts/clip.py): no module keeps a copy of its own."""
    copies = [f"{path.relative_to(REPO)}:{node.lineno} {node.name}" for path in _modules()
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.FunctionDef) and node.name.lstrip("_") in ("clip", "clip_text")]
    assert copies == ["app/texts/clip.py:7 clip"]


def test_the_llm_layer_knows_nothing_of_the_graph() -> None:
    for path in (APP / "llm").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [n for n in names if n.startswith(("langgraph", "app.graph"))], path


def test_no_module_is_too_long_to_read() -> None:
    long = {str(p.relative_to(REPO)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


_PROBE = """
import importlib, json, logging, os, pkgutil, sys, threading
sys.path.insert(0, sys.argv[1])
os.environ["MAX_CONCURRENT_ORCHESTRATIONS"] = "not a number"   # a bad setting must not fail an import
environ = dict(os.environ)
handlers = list(logging.getLogger().handlers)
threads = threading.active_count()
import app
names = [m.name for m in pkgutil.walk_packages(app.__path__, "app.") if not m.name.startswith("app.cli.__main__")]
for name in names:
    importlib.import_module(name)
import app.main
try:
    app.main.app
    served = "built"
except Exception as exc:
    served = type(exc).__name__
print(json.dumps({"modules": len(names), "environ_changed": sorted(set(os.environ.items()) ^ set(environ.items())),
                  "handlers_changed": logging.getLogger().handlers != handlers,
                  "threads": threading.active_count() - threads, "served": served}))
"""


def test_importing_every_module_does_no_work() -> None:
    """No settings read, no environment written, no logging configured, no thread started at
    import; the served app is built (and its settings checked) only when uvicorn asks for it."""
    done = subprocess.run([sys.executable, "-c", _PROBE, str(REPO)], capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(REPO)}, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["modules"] > 100
    assert report["environ_changed"] == []
    assert report["handlers_changed"] is False
    assert report["threads"] == 0
    assert report["served"] == "ValidationError"  # `app.main:app` reads the (bad) settings on access
