"""The open-files limit of the process: every websocket, every connection to a
model provider or MCP server, and every database file is a file descriptor, and
many systems start processes with a soft limit of 1,024 (about 500 chat sessions).
At start-up the soft limit is raised to the hard limit (capped), and the log says so."""

from __future__ import annotations

import logging

__all__ = ["WANTED_OPEN_FILES", "raise_open_files_limit"]

log = logging.getLogger("switchboard")

# Enough for tens of thousands of sessions; the kernel's hard limit caps it.
WANTED_OPEN_FILES = 65_536


def raise_open_files_limit(wanted: int = WANTED_OPEN_FILES) -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE towards `wanted` (never above the hard limit, never
    lower it). Returns (soft before, soft after); (-1, -1) where the platform has no such limit."""
    try:
        import resource
    except ImportError:  # Windows
        return -1, -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            log.warning(
                "could not raise the open-files limit from %d to %d (%s); about %d sessions fit",
                soft,
                target,
                exc,
                soft // 2,
                extra={"event": "open_files_limit"},
            )
            return soft, soft
        log.info(
            "open-files limit raised from %d to %d",
            soft,
            target,
            extra={"event": "open_files_limit", "before": soft, "after": target},
        )
        return soft, target
    if soft != resource.RLIM_INFINITY and soft < 4096:
        log.warning(
            "the open-files limit is %d (hard limit %d): about %d chat sessions fit; raise it "
            "(ulimit -n, or LimitNOFILE= in a systemd unit) for more",
            soft,
            hard,
            soft // 2,
            extra={"event": "open_files_limit"},
        )
    return soft, soft
