"""No production module imports `app.dev`: the launchers stay out of what the container runs.

Scans the syntax tree of every module under `app/` outside `app/dev/` for `import app.dev…`,
`from app.dev… import …`, `from app import dev`, relative imports that land in `app.dev`, and
`importlib.import_module("app.dev…")` with a literal name.
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
DEV = APP / "dev"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(APP.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_dev(name: str) -> bool:
    return name == "app.dev" or name.startswith("app.dev.")


def dev_imports(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """The names under `app.dev` that `source` (the module `module`) imports."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_dev(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found += [name for name in (base, *(f"{base}.{alias.name}" for alias in node.names)) if _is_dev(name)]
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and _is_dev(node.args[0].value)):
            found.append(node.args[0].value)
    return sorted(set(found))


def production_modules() -> list[Path]:
    return sorted(path for path in APP.rglob("*.py") if DEV not in path.parents)


def test_no_production_module_imports_app_dev() -> None:
    modules = production_modules()
    assert len(modules) > 50 and APP / "main.py" in modules and not any(DEV in p.parents for p in modules)
    offenders = {
        str(path.relative_to(APP.parent)): names
        for path in modules
        if (names := dev_imports(path.read_text(), _module_name(path), is_package=path.name == "__init__.py"))
    }
    assert offenders == {}, f"production modules import the dev launchers: {offenders}"


def test_the_scan_finds_every_form_of_import() -> None:
    """So that a slip in the scanner cannot pass everything."""
    assert dev_imports("import app.dev.embedded_mongo", "app.health") == ["app.dev.embedded_mongo"]
    assert dev_imports("import app.dev as d", "app.health") == ["app.dev"]
    assert dev_imports("from app.dev.embedded_model import EmbeddedModel", "app.llm.provider") == [
        "app.dev.embedded_model", "app.dev.embedded_model.EmbeddedModel"]
    assert dev_imports("from app import dev", "app.main") == ["app.dev"]
    assert dev_imports("from ..dev import loopback_server", "app.llm.provider") == [
        "app.dev", "app.dev.loopback_server"]
    assert dev_imports("from . import dev", "app", is_package=True) == ["app.dev"]
    assert dev_imports("def f():\n    import app.dev.model_install", "app.main") == ["app.dev.model_install"]
    assert dev_imports("importlib.import_module('app.dev.embedded_mongo')", "app.main") == ["app.dev.embedded_mongo"]
    assert dev_imports("import app.devices\nfrom app import development\nx = 'app.dev'", "app.main") == []
    assert dev_imports("from . import config", "app.llm.provider") == []
