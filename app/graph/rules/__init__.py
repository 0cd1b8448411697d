"""The graph's rules: pure decisions and texts the nodes apply (approvals, intent, classification,
recovery after a failure, goals and waves, progress, reports, verification of a step's files, test
commands, tracker operations). No LangGraph here: each is tested on plain values
(tests/unit/test_architecture.py keeps it so)."""
