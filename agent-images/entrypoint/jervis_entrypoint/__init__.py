"""Jervis agent entrypoint: one coding-agent step, one git step, or one test run, on a workspace.

The contract is agent-images/CONTRACT.md. The same package runs as the ENTRYPOINT of every agent
image (`python3 /opt/jervis/jervis_entrypoint`), under the orchestrator's local runner and under
the fake Kubernetes API of the tests, so it uses the standard library only and runs with any
Python >= 3.11.

Whatever happens it tries to leave `.jervis/result.json`, because the orchestrator judges a step
from that file and the exit code, never from an agent's word alone: the changed files are what
git sees, and an agent that exits 0 after an error (Aider does) or reports `is_error` in its JSON
(Claude Code does) has failed. A test run says whether the tests passed, failed, or could not run
at all (a missing test tool is not the agent's fault).

`main` ties the three modes together: `agent_mode` (with `config`, `agents/`, `mcp`, `process`,
`signals`, `judge`, `changes`), `git_mode` (with `git_plan`, `commit_series`, `git`) and `tests`
(with `pytest_install`); `result` writes the result file. Importing the package does nothing.
"""
