"""Token and cost figures of one standard orchestration, as the budget tracker records them.

    .venv/bin/python -m bench.usage

A single code task (intake → plan → plan_steps → agent → commit approval → finalize) against the
scripted LLM, once on the local tier and once escalated to a cloud tier (Anthropic endpoint of
the scripted server, priced from litellm's offline map). Prints the run record's usage.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
from pymongo import MongoClient
from pymongo.collection import Collection

from bench.loopback import loopback
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import Reply
from tests.fixtures.service import ServiceProcess, service_env
from tests.support import approval, code_task_script, kotlin_rules, make_git_repo, node_marker, orchestrate_body


def run_once(service: ServiceProcess, kotlin: FakeKotlinServer, workspace: str, rules: dict[str, Any]) -> str:
    with httpx.Client(base_url=service.url, timeout=30) as client:
        body = orchestrate_body(workspace_path=workspace, rules=rules)
        thread_id: str = client.post("/orchestrate/stream", json=body).json()["thread_id"]
        kotlin.wait_for_status(thread_id=thread_id, status="interrupted", timeout=60)
        client.post(f"/approve/{thread_id}", json=approval(True, "ano"))
        kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=60)
    time.sleep(0.5)  # the run record is written right after the push
    return thread_id


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="jervis-usage-"))
    with loopback(work) as stack:
        mongo, llm, kotlin, kb = stack.mongo, stack.llm, stack.kotlin, stack.kb
        (work / "data").mkdir()
        env = service_env(mongo_url=mongo.url, llm_url=llm.url, kotlin_url=kotlin.url, kb_url=kb.url,
                          data_root=work / "data", anthropic_api_key="bench", anthropic_api_base=llm.url,
                          llm_breaker_failures=100)  # every call tries local first, as on a healthy day
        service = ServiceProcess(env=env, log_path=work / "service.log").start()
        runs: Collection[dict[str, Any]] = MongoClient(mongo.url)[env["MONGODB_DATABASE"]]["orchestrator_runs"]
        try:
            for label, local_fails in (("local tier", False), ("escalated to cloud_reasoning", True)):
                script = code_task_script()
                if local_fails:  # Ollama refuses every call; the same prompts succeed on /v1/messages
                    script = [Reply(match=node_marker(n), status=500, times=3)
                              for n in ("intake", "plan", "plan_steps", "finalize")] + script
                llm.script(*script)
                rel = f"clients/c1/{label.split()[0]}"
                make_git_repo(work / "data" / rel)
                thread_id = run_once(service, kotlin, rel, kotlin_rules(auto_use_anthropic=local_fails))
                usage = (runs.find_one({"_id": thread_id}) or {})["usage"]
                print(f"== {label}: {usage['tokens']} tokens ({usage['prompt_tokens']} prompt + "
                      f"{usage['completion_tokens']} completion), ${usage['cost_usd']:.6f}, "
                      f"{usage['llm_calls']} LLM calls, {usage['seconds']:.2f} s of run time")
                print(json.dumps(usage["by_node_tier"], indent=2))
        finally:
            service.stop()


if __name__ == "__main__":
    main()
