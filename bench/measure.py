"""Figures for the load, burst, soak and model-memory benchmarks: percentiles, a least-squares
slope, and what /proc says about a process (resident memory, open descriptors, CPU time, TCP
connections to a port). Standard library only: the load generator's own processes import it too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_ESTABLISHED = "01"


def percentile(values: Sequence[float], q: float) -> float:
    """The `q` quantile (0 ≤ q ≤ 1) by nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ys over xs (0 for fewer than two distinct xs)."""
    n = len(xs)
    if n < 2 or n != len(ys):
        return 0.0
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def tail_slope(xs: Sequence[float], ys: Sequence[float], tail: float = 2 / 3) -> float:
    """The slope over the last `tail` of the samples (at least two): start-up and warm-up excluded."""
    keep = max(2, math.ceil(len(xs) * tail))
    return slope(xs[-keep:], ys[-keep:])


def knee(steps: list[tuple[float, float, float]], p99_limit: float) -> tuple[float | None, float | None]:
    """(last offered rate that kept up, first that did not) of ramp steps (offered, achieved, p99 s)."""
    good = None
    for offered, achieved, p99 in steps:
        if p99 > p99_limit or achieved < 0.9 * offered:
            return good, offered
        good = offered
    return good, None


@dataclass(frozen=True)
class ProcessSample:
    rss_kb: int
    """VmRSS: resident memory, shared pages included"""
    anon_kb: int
    """RssAnon: the process's own heap and stacks (what a leak grows)"""
    fds: int
    threads: int
    cpu_seconds: float
    """user + system CPU time so far"""


def status_fields(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _kb(value: str) -> int:
    return int(value.split()[0]) if value else 0


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a process (fields 14 and 15 of /proc/<pid>/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def sample_process(pid: int) -> ProcessSample:
    fields = status_fields(pid)
    return ProcessSample(rss_kb=_kb(fields.get("VmRSS", "")), anon_kb=_kb(fields.get("RssAnon", "")),
                         fds=len(os.listdir(f"/proc/{pid}/fd")), threads=int(fields.get("Threads", "0")),
                         cpu_seconds=cpu_seconds(pid))


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, state) of the direct children of `pid`; state `Z` is a zombie nobody reaped."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
        if int(ppid) == pid:
            found.append((int(entry), state))
    return found


def established_to(pid: int, port: int) -> int:
    """TCP connections of process `pid` in state ESTABLISHED whose remote end is `port`."""
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(f"{fd_dir}/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in (f"/proc/{pid}/net/tcp", f"/proc/{pid}/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            remote_port = int(parts[2].rsplit(":", 1)[1], 16)
            if remote_port == port and parts[3] == _ESTABLISHED and parts[9] in inodes:
                count += 1
    return count


class CpuMeter:
    """CPU used by a few processes between `start()` and `stop()`, as a percentage of one core."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self._start: dict[str, float] = {}
        self._wall = 0.0

    def start(self, now: float) -> None:
        self._wall = now
        self._start = {name: _cpu_or_nan(pid) for name, pid in self.pids.items()}

    def stop(self, now: float) -> dict[str, float]:
        wall = max(1e-9, now - self._wall)
        return {name: 100 * (_cpu_or_nan(pid) - self._start[name]) / wall for name, pid in self.pids.items()}


def _cpu_or_nan(pid: int) -> float:
    try:
        return cpu_seconds(pid)
    except OSError:
        return math.nan
