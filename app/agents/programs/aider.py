"""The local Aider (`aider_install`) as a `LocalProgram`: its virtualenv, and the local LLM it talks to."""

from __future__ import annotations

import json
import os

from app.agents.aider_install import AIDER_SPEC, AiderInstallError, aider_bin_dir, ensure_aider, is_installed
from app.agents.programs import AgentInstallError, Log, resolve
from app.config import Settings


class AiderProgram:
    name = "aider"

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self.venv = resolve(settings.aider_venv)

    def installed(self) -> bool:
        return is_installed(self.venv)

    def install(self, log: Log) -> None:
        try:
            ensure_aider(self.venv, log=log)
        except AiderInstallError as exc:
            raise AgentInstallError(str(exc)) from exc

    def env(self) -> dict[str, str]:
        model, model_env = self.model()
        return {"AGENT_TYPE": "aider", "AGENT_MODEL": model, "AGENT_EXTRA_ARGS": json.dumps(self._settings.aider_args),
                "PATH": f"{aider_bin_dir(self.venv)}{os.pathsep}{os.environ.get('PATH', '')}", **model_env}

    def describe(self) -> str:
        state = "installed" if self.installed() else "installed on first use"
        return f"aider ({AIDER_SPEC}, model {self.model()[0]}; {state} in {self.venv})"

    def model(self) -> tuple[str, dict[str, str]]:
        """The local LLM for Aider: the OpenAI-compatible local server (the embedded model) when
        configured, else Ollama's chat API with the local tiers' model (OLLAMA_URL reaches the
        entrypoint, which hands it to litellm as OLLAMA_API_BASE)."""
        settings = self._settings
        if settings.local_llm_api_base:
            return settings.local_llm_model, {"OPENAI_API_BASE": settings.local_llm_api_base,
                                              "OPENAI_API_KEY": "local"}
        return f"ollama_chat/{settings.local_model}", {}
