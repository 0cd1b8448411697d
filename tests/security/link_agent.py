"""A hostile agent for the read-back tests: the scripted agent (tests/fixtures/scripted_agent.py),
and then, for every line

    @@LINK relative/path /absolute/target

in its instructions, `relative/path` replaced by a symlink to the target, listed among the changed
files of its result. A symlink needs no access to its target: the sandbox hides the target from
the agent, but the service, which runs outside the sandbox, would read it through the link.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fixtures import scripted_agent

_LINK = re.compile(r"^@@LINK[ \t]+(\S+)[ \t]+(\S+)[ \t]*$", re.MULTILINE)


def main() -> int:
    code = scripted_agent.main()
    workspace = Path(os.environ.get("WORKSPACE_PATH") or os.getcwd()).resolve()
    instructions = (workspace / ".jervis" / "instructions.md").read_text(encoding="utf-8")
    linked = []
    for rel, target in _LINK.findall(instructions):
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        path.symlink_to(target)
        linked.append(rel)
        print(f"linked {rel}", flush=True)
    result_file = workspace / ".jervis" / "result.json"
    if linked and result_file.is_file():
        result = json.loads(result_file.read_text(encoding="utf-8"))
        result["changedFiles"] = sorted({*result.get("changedFiles", []), *linked})
        result_file.write_text(json.dumps(result), encoding="utf-8")
    return code


if __name__ == "__main__":
    sys.exit(main())
