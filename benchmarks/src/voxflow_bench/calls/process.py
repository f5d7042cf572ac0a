"""CPU time and resident memory of the processes that serve a port, read from ``/proc``.

The calls benchmark charges a server for everything its processes use: all threads, and every
process listening on the port (several serve one port with ``SO_REUSEPORT``). Linux only, and
for a server on this machine; elsewhere the figures are reported as missing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcessSample", "listening_pids", "sample"]

_LISTEN = "0A"
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class ProcessSample:
    cpu_s: float  # user + system, all threads, summed over the processes
    rss_bytes: int  # summed over the processes
    processes: int


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if (
                len(fields) > 9
                and fields[3] == _LISTEN
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                inodes.add(fields[9])
    return inodes


def listening_pids(port: int) -> tuple[int, ...]:
    """The processes with a socket listening on ``port`` (those this user may inspect)."""
    targets = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    found: set[int] = set()
    if not targets:
        return ()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in targets:
                    found.add(int(entry.name))
                    break
        except OSError:
            continue
    return tuple(sorted(found))


def sample(pids: tuple[int, ...]) -> ProcessSample | None:
    """CPU and RSS of ``pids`` now (None when none can be read)."""
    cpu = 0.0
    rss = 0
    read = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            statm = Path(f"/proc/{pid}/statm").read_text().split()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        cpu += (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime
        rss += int(statm[1]) * _PAGE
        read += 1
    return ProcessSample(cpu, rss, read) if read else None
