"""Test harness: real processes on loopback (nx-27017, scripted LLM, fake Kotlin, fake KB, the service)."""

import os

# litellm must not try to fetch its price map from the internet in tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

pytest_plugins = [
    "tests.fixtures.mongo",
    "tests.fixtures.servers",
    "tests.fixtures.service",
]
