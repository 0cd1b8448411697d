"""Git on a workspace, run by the service itself (local runner mode).

Commits carry a `Jervis-Thread:` trailer so a commit is made at most once per thread: the
git_operations node re-runs from its start after every resume, and must not commit twice.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path


class GitError(RuntimeError):
    """A git command failed."""


class GitWorkspace:
    def __init__(self, path: Path) -> None:
        self.path = path

    async def _git(self, *args: str, check: bool = True) -> str:
        proc = await asyncio.create_subprocess_exec(
            "git", *args, cwd=self.path,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        if check and proc.returncode != 0:
            raise GitError(f"git {' '.join(args)}: {err.decode(errors='replace').strip()}")
        return out.decode(errors="replace")

    async def is_repo(self) -> bool:
        if not (self.path / ".git").exists():
            return False
        return (await self._git("rev-parse", "--is-inside-work-tree", check=False)).strip() == "true"

    async def snapshot(self) -> dict[str, str]:
        """Dirty paths → content digest, to tell which files one agent step changed."""
        out = await self._git("status", "--porcelain", "-z", "--untracked-files=all")
        state: dict[str, str] = {}
        entries = out.split("\0")
        skip = False
        for entry in entries:
            if skip:
                skip = False
                continue
            if len(entry) < 4:
                continue
            code, rel = entry[:2], entry[3:]
            if code.startswith("R"):
                skip = True  # the next entry is the rename source
            file = self.path / rel
            digest = hashlib.sha1(file.read_bytes()).hexdigest() if file.is_file() else "deleted"
            state[rel] = f"{code}:{digest}"
        return state

    async def changed_since(self, before: dict[str, str]) -> list[str]:
        after = await self.snapshot()
        return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))

    async def checkout_branch(self, branch: str) -> None:
        current = (await self._git("rev-parse", "--abbrev-ref", "HEAD", check=False)).strip()
        if current == branch:
            return
        exists = await self._git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
        if exists.strip():
            await self._git("checkout", branch)
        else:
            await self._git("checkout", "-b", branch)

    async def find_commit(self, trailer: str) -> str | None:
        out = await self._git("log", "-n", "50", "--format=%H%x00%B%x01", check=False)
        for record in out.split("\x01"):
            sha, _, body = record.strip().partition("\x00")
            if sha and trailer in body:
                return sha
        return None

    async def commit(self, files: list[str], message: str, *, trailer: str) -> str:
        """Stage exactly `files` and commit; returns the sha (the existing one if already done)."""
        existing = await self.find_commit(trailer)
        if existing:
            return existing
        await self._git("add", "-A", "--", *files)
        await self._git(
            "-c", "user.name=Jervis", "-c", "user.email=jervis@localhost",
            "commit", "-m", f"{message}\n\n{trailer}", "--", *files,
        )
        return (await self._git("rev-parse", "HEAD")).strip()

    async def push(self, branch: str, remote: str = "origin") -> None:
        remotes = (await self._git("remote")).split()
        if remote not in remotes:
            raise GitError(f"no git remote '{remote}' configured")
        await self._git("push", remote, f"{branch}:{branch}")
