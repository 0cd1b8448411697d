"""What the sandbox's own network costs: start time, and the first token of a streamed answer
through the relay. Prints min / median / max; asserts nothing.

    .venv/bin/python -m bench.sandbox_relay [--starts 20] [--requests 20] [--chunk-delay-ms 20]

* **Sandbox start**: `true` run in the local runner's sandbox as it was before issue 40 (the host's
  network shared, no forwarder) and as it is now (`--unshare-net`, the step's relay directory
  bound, the forwarder listening before the command starts), plus the relay's `open`/`release`
  of the step's sockets.
* **First token**: a client inside the sandbox streams chat completions from the scripted LLM
  server (tests/fixtures/llm_server.py, pieces `--chunk-delay-ms` apart) straight over the shared
  network, and through the forwarder and the relay; it reports the time from sending the request
  to the first content piece, and to the last (a relay that gathered the answer would move the
  first to the last).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from app.agents.base import AgentJob
from app.agents.relay import AgentRelay
from app.agents.relay_routes import step_routes
from app.agents.sandbox import AgentSandbox, probe
from app.config import Settings
from tests.fixtures.llm_server import Reply, ScriptedLlmServer

ANSWER = "def subtract(a, b):\n    return a - b\n" * 4
#: Streams `requests` chat completions and prints, per request, seconds to the first and last piece.
CLIENT = r'''
import http.client, json, sys, time
port, requests = int(sys.argv[1]), int(sys.argv[2])
figures = []
for _ in range(requests):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = json.dumps({"model": "test-model", "stream": True, "messages": [{"role": "user", "content": "go"}]})
    started = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", body=body, headers={"content-type": "application/json"})
    response = connection.getresponse()
    first = None
    for line in response:
        if line.startswith(b"data: {") and b'"content"' in line and first is None:
            first = time.perf_counter() - started
    figures.append([first, time.perf_counter() - started])
    connection.close()
print(json.dumps(figures))
'''


def _figures(label: str, values: list[float], unit: str = "ms") -> str:
    scaled = [value * 1000 for value in values]
    return (f"  {label:44} min {min(scaled):7.1f} {unit}  median {statistics.median(scaled):7.1f} {unit}  "
            f"max {max(scaled):7.1f} {unit}")


def _without_relay(argv: list[str]) -> list[str]:
    """The same sandbox as before issue 40: the host's network shared."""
    cut = argv.index("--unshare-all") + 1
    return [*argv[:cut], "--share-net", *argv[cut:]]


async def _run(argv: list[str], env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"{argv[-3:]} exited {process.returncode}: {err.decode()[-500:]}")
    return time.perf_counter() - started, out


async def bench(starts: int, requests: int, chunk_delay: float) -> None:
    work = Path(tempfile.mkdtemp(prefix="jervis-bench-relay-"))
    workspace = work / "data" / "c1" / "ws"
    workspace.mkdir(parents=True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work)}
    llm = ScriptedLlmServer()
    llm.start()
    try:
        settings = Settings(local_agent_command=["true"], local_llm_api_base=f"{llm.url}/v1", agent_sandbox="bwrap")
        relay = AgentRelay(work / "data" / ".orchestrator" / "relay")
        sandbox = AgentSandbox(settings, env, data_root=work / "data", relay=relay)
        bwrap = sandbox.bwrap
        if bwrap is None or not (await probe(bwrap)).works:
            sys.exit("bubblewrap does not work here")
        job = AgentJob(thread_id="thread-bench", task_id="t1", client_id="c1", agent_type="command",
                       workspace=workspace)
        routes = step_routes(settings, job, "command", env)
        print(f"sandbox start ({starts} runs of `true`; {(await probe(bwrap)).version})")
        before, unshared, after, leases = [], [], [], []
        for _ in range(starts):
            before.append((await _run(_without_relay(sandbox.bwrap_argv(job, bwrap, ["true"], env)), env))[0])
            unshared.append((await _run(sandbox.bwrap_argv(job, bwrap, ["true"], env), env))[0])
            started = time.perf_counter()
            lease = await relay.open("bench", routes)
            opened = time.perf_counter() - started
            after.append((await _run(sandbox.bwrap_argv(job, bwrap, ["true"], env, lease), env))[0])
            started = time.perf_counter()
            await relay.release(lease)
            leases.append(opened + time.perf_counter() - started)
        print(_figures("before (--share-net, no forwarder)", before))
        print(_figures("--unshare-net alone (a test run)", unshared))
        print(_figures("after (--unshare-net + forwarder)", after))
        print(_figures("relay open + release of the step's sockets", leases))

        llm.script(Reply(content=ANSWER, chunk_size=8, chunk_delay=chunk_delay))
        client = work / "client.py"
        client.write_text(CLIENT)
        command = [sys.executable, str(client), str(llm.port), str(requests)]
        lease = await relay.open("bench", routes)
        try:
            await _run(sandbox.bwrap_argv(job, bwrap, [*command[:3], "2"], env, lease), env)  # warm-up
            _, direct_out = await _run(_without_relay(sandbox.bwrap_argv(job, bwrap, command, env)), env)
            _, relayed_out = await _run(sandbox.bwrap_argv(job, bwrap, command, env, lease), env)
        finally:
            await relay.release(lease)
        pieces = -(-len(ANSWER) // 8)
        print(f"streamed chat completion ({requests} requests; {pieces} pieces {chunk_delay * 1000:g} ms apart)")
        for label, out in (("direct", direct_out), ("through the relay", relayed_out)):
            figures = json.loads(out)
            print(_figures(f"first token, {label}", [first for first, _ in figures]))
            print(_figures(f"last token, {label}", [last for _, last in figures]))
    finally:
        llm.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--chunk-delay-ms", type=float, default=20.0)
    args = parser.parse_args()
    asyncio.run(bench(args.starts, args.requests, args.chunk_delay_ms / 1000))


if __name__ == "__main__":
    main()

