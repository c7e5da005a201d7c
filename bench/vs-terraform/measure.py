#!/usr/bin/env python3
"""Runs a command and reports its wall time and the peak resident memory of its whole process
tree (the command and every process it starts, summed at each sample: Terraform's provider
plugins are processes of their own).

    measure.py OUT.json -- COMMAND [ARGS...]

Writes {"wall_seconds", "peak_rss_mib", "exit"} to OUT.json; the command's output goes to its
stdout and stderr unchanged. Sampled every 20 ms from /proc (Linux).
"""

import json
import os
import subprocess
import sys
import time


def tree_rss_kib(root):
    """The summed VmRSS of `root` and its descendants now."""
    children = {}
    rss = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
        except OSError:
            continue
        ppid = rss_kib = 0
        for line in status.splitlines():
            if line.startswith("PPid:"):
                ppid = int(line.split()[1])
            elif line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = rss_kib
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def main():
    out, rest = sys.argv[1], sys.argv[2:]
    if rest and rest[0] == "--":
        rest = rest[1:]
    started = time.monotonic()
    child = subprocess.Popen(rest)
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss_kib(child.pid))
        time.sleep(0.02)
    wall = time.monotonic() - started
    with open(out, "w") as f:
        json.dump({"wall_seconds": wall, "peak_rss_mib": peak / 1024, "exit": child.returncode}, f)
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
