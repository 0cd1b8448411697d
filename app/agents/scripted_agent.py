"""A small deterministic coding agent for development and tests.

It reads `.jervis/instructions.md` and applies only what the instructions spell out:

    <<<FILE relative/path.py
    file content
    >>>
    @@SLEEP 2.5       wait (to test cancel and timeouts)
    @@FAIL reason     report failure
    @@EXIT 3          exit with that code without a result
    @@NO_RESULT       exit 0 without writing result.json

then writes `.jervis/result.json` as every agent must (spec §10.4).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

_FILE_BLOCK = re.compile(r"^<<<FILE[ \t]+(\S+)[ \t]*\n(.*?)^>>>[ \t]*$", re.DOTALL | re.MULTILINE)
_DIRECTIVE = re.compile(r"^@@(SLEEP|FAIL|EXIT|NO_RESULT)\b[ \t]*(.*)$", re.MULTILINE)


def main() -> int:
    workspace = Path(os.environ.get("WORKSPACE_PATH") or os.getcwd()).resolve()
    instructions = (workspace / ".jervis" / "instructions.md").read_text(encoding="utf-8")
    print(f"scripted agent: {len(instructions)} chars of instructions", flush=True)
    failure = None
    for name, arg in _DIRECTIVE.findall(instructions):
        if name == "SLEEP":
            print(f"sleeping {arg}s", flush=True)
            time.sleep(float(arg or 1))
        elif name == "EXIT":
            return int(arg or 1)
        elif name == "NO_RESULT":
            return 0
        elif name == "FAIL":
            failure = arg or "failed on request"
    written: list[str] = []
    for rel, content in _FILE_BLOCK.findall(instructions):
        target = (workspace / rel).resolve()
        if not target.is_relative_to(workspace):
            print(f"refusing to write outside the workspace: {rel}", file=sys.stderr, flush=True)
            failure = f"path outside workspace: {rel}"
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        written.append(rel)
        print(f"wrote {rel}", flush=True)
    result = {
        "success": failure is None,
        "summary": failure or (f"Wrote {len(written)} file(s): {', '.join(written)}" if written else "Nothing to change"),
        "changedFiles": written,
    }
    (workspace / ".jervis" / "result.json").write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
