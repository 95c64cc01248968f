"""The values of tool trust (tools/trust.py), shared by the tools layer that decides and the store
that keeps them: a tool's stored decision, and one administrator's decision as it was made (what
the audit log will record)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

__all__ = ["TrustDecision", "TrustRecord"]


@dataclass(frozen=True, slots=True)
class TrustRecord:
    server: str
    tool: str
    state: Literal["approved", "blocked"]
    pin: str | None  # the approved pin (`legacy:<digest>`: an older version's); None when blocked unapproved
    definition: dict[str, Any] | None  # the approved definition
    version: int
    decided_by: str | None  # None: approved automatically (a `trust: auto` server's first definition)
    decided_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TrustDecision:
    kind: Literal["approve", "block"]
    server: str
    tool: str
    qualified_name: str
    pin: str  # the pin the administrator saw
    by: str
    at: datetime
    before_state: str  # the tool's state before: pending, changed, blocked, approved
    before_pin: str | None  # the pin approved before, if any
