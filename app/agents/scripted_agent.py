"""A small deterministic coding agent: a test fixture, selected explicitly by the tests.

It reads `.jervis/instructions.md` and applies only what the instructions spell out:

    <<<FILE relative/path.py [@N | @N+]
    file content
    >>>
    @@SLEEP 2.5                 wait (to test cancel and timeouts)
    @@FAIL [@N | @N+] reason    report failure
    @@SUMMARY text              the summary it reports (an inspect step's findings)
    @@EXIT 3                    exit with that code without a result
    @@NO_RESULT                 exit 0 without writing result.json

`@N` limits a block or directive to attempt N of the step (`JERVIS_ATTEMPT`), `@N+` to attempt N
and later, so a test can script "fails first, passes on the retry". It prints its instructions
(so tests can read what an attempt was told) and writes `.jervis/result.json` as every agent
must (spec §10.4).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

_FILE_BLOCK = re.compile(r"^<<<FILE[ \t]+(\S+)(?:[ \t]+@(\d+)(\+?))?[ \t]*\n(.*?)^>>>[ \t]*$", re.DOTALL | re.MULTILINE)
_DIRECTIVE = re.compile(r"^@@(SLEEP|FAIL|EXIT|NO_RESULT|SUMMARY)\b[ \t]*(?:@(\d+)(\+?)[ \t]*)?(.*)$", re.MULTILINE)


def _applies(attempt: int, number: str, and_later: str) -> bool:
    if not number:
        return True
    return attempt >= int(number) if and_later else attempt == int(number)


def main() -> int:
    workspace = Path(os.environ.get("WORKSPACE_PATH") or os.getcwd()).resolve()
    attempt = int(os.environ.get("JERVIS_ATTEMPT") or "1")
    instructions = (workspace / ".jervis" / "instructions.md").read_text(encoding="utf-8")
    print(f"scripted agent: attempt {attempt}, {len(instructions)} chars of instructions", flush=True)
    for line in instructions.splitlines():
        print(f"instructions| {line}", flush=True)
    failure = None
    summary = None
    for name, number, and_later, arg in _DIRECTIVE.findall(instructions):
        if not _applies(attempt, number, and_later):
            continue
        if name == "SLEEP":
            print(f"sleeping {arg}s", flush=True)
            time.sleep(float(arg or 1))
        elif name == "EXIT":
            return int(arg or 1)
        elif name == "NO_RESULT":
            return 0
        elif name == "FAIL":
            failure = arg or "failed on request"
        elif name == "SUMMARY":
            summary = arg
    written: list[str] = []
    for rel, number, and_later, content in _FILE_BLOCK.findall(instructions):
        if not _applies(attempt, number, and_later):
            continue
        target = (workspace / rel).resolve()
        if not target.is_relative_to(workspace):
            print(f"refusing to write outside the workspace: {rel}", file=sys.stderr, flush=True)
            failure = f"path outside workspace: {rel}"
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        written.append(rel)
        print(f"wrote {rel}", flush=True)
    done = f"Wrote {len(written)} file(s): {', '.join(written)}" if written else "Nothing to change"
    result = {"success": failure is None, "summary": failure or summary or done, "changedFiles": written}
    (workspace / ".jervis" / "result.json").write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
