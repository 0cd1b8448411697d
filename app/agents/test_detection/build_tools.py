"""Test commands of the build tools that say so in a file at the workspace root: make, the
JavaScript package managers, Gradle, Maven, Go, Cargo and autotools."""

from __future__ import annotations

import re
from pathlib import Path

from app.agents.test_detection.command import TestCommand
from app.agents.test_detection.files import is_file, read_json, read_text

#: GNU make's own lookup order: the first one found is the one `make test` uses.
MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
#: Make targets that run a project's tests, in order: `test`, else the GNU/autotools `check`.
MAKE_TARGETS = ("test", "check")
NPM_PLACEHOLDER = "no test specified"
#: The lockfile a package manager writes, the command that runs `scripts.test` with it.
LOCKFILES = (
    ("pnpm-lock.yaml", "pnpm", ["pnpm", "test"]),
    ("yarn.lock", "yarn", ["yarn", "test"]),
    ("bun.lock", "bun", ["bun", "run", "test"]),  # `bun test` is bun's own runner, not the script
    ("bun.lockb", "bun", ["bun", "run", "test"]),
    ("package-lock.json", "npm", ["npm", "test"]),
)
PACKAGE_MANAGERS = {manager: argv for _lockfile, manager, argv in LOCKFILES}


def make_target_rule(target: str) -> re.Pattern[str]:
    """A rule line naming `target` among its targets (`test:`, `unit test ::`), not `test := …`."""
    name = re.escape(target)
    return re.compile(rf"^(?:[^\s:=#]+[ \t]+)*{name}(?:[ \t]+[^\s:=#]+)*[ \t]*::?(?![:=])", re.MULTILINE)


MAKE_RULES = {target: make_target_rule(target) for target in MAKE_TARGETS}


def make_rule(workspace: Path) -> TestCommand | None:
    """`make test` when the makefile make would use defines a `test` target, else `make check`
    (the GNU convention every autotools-generated Makefile follows)."""
    for name in MAKEFILES:
        if is_file(workspace / name):
            text = read_text(workspace / name)
            for target in MAKE_TARGETS:
                if text is not None and MAKE_RULES[target].search(text):
                    return TestCommand(argv=["make", target], source=f"{name} target {target}")
            return None  # make reads only the first makefile it finds
    return None


def autotools_rule(workspace: Path) -> TestCommand | None:
    """An autotools project not configured yet (no Makefile): configure it, then `make check`."""
    if not (is_file(workspace / "configure.ac") or is_file(workspace / "configure.in")):
        return None
    if not is_file(workspace / "Makefile.am"):
        return None
    return TestCommand(shell="autoreconf -fi && ./configure && make check",
                       source="autotools (configure.ac and Makefile.am: make check)")


def npm_rule(workspace: Path) -> TestCommand | None:
    """package.json's `scripts.test` (not npm's init placeholder), run by the project's package
    manager: the `packageManager` field, else the lockfile there is, else npm."""
    package = read_json(workspace / "package.json")
    if not isinstance(package, dict):
        return None
    scripts = package.get("scripts")
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if not (isinstance(script, str) and script.strip() and NPM_PLACEHOLDER not in script):
        return None
    declared = package.get("packageManager")
    manager = declared.split("@", 1)[0].strip() if isinstance(declared, str) else ""
    if manager in PACKAGE_MANAGERS:
        return TestCommand(argv=PACKAGE_MANAGERS[manager],
                           source=f"package.json scripts.test (packageManager {manager})")
    for lockfile, _manager, argv in LOCKFILES:
        if is_file(workspace / lockfile):
            return TestCommand(argv=argv, source=f"package.json scripts.test ({lockfile})")
    return TestCommand(argv=["npm", "test"], source="package.json scripts.test")


def gradle_rule(workspace: Path) -> TestCommand | None:
    """The Gradle wrapper when the project ships one (it pins the Gradle version), else gradle."""
    if is_file(workspace / "gradlew"):
        return TestCommand(argv=["./gradlew", "test"], source="gradlew")
    for name in ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"):
        if is_file(workspace / name):
            return TestCommand(argv=["gradle", "test"], source=name)
    return None


def maven_rule(workspace: Path) -> TestCommand | None:
    """The Maven wrapper when present next to pom.xml, else mvn; quiet, the tail is what counts."""
    if not is_file(workspace / "pom.xml"):
        return None
    if is_file(workspace / "mvnw"):
        return TestCommand(argv=["./mvnw", "-q", "test"], source="pom.xml with mvnw")
    return TestCommand(argv=["mvn", "-q", "test"], source="pom.xml")


def go_rule(workspace: Path) -> TestCommand | None:
    """Every package of the Go module."""
    return TestCommand(argv=["go", "test", "./..."], source="go.mod") if is_file(workspace / "go.mod") else None


def cargo_rule(workspace: Path) -> TestCommand | None:
    """The Cargo package or workspace."""
    return TestCommand(argv=["cargo", "test"], source="Cargo.toml") if is_file(workspace / "Cargo.toml") else None
