"""Ranked search over the tool catalogue (the gateway's `switchboard_search_tools`).

SQLite's FTS5 (in Python's standard library: no new dependency, BM25 ranking in C)
indexes each tool's qualified name split into words, its description, and its
parameters' names and descriptions, with the Porter stemmer so that "listing"
finds "list".  The index is built once per catalogue (the registry drops it
when it rebuilds) and is only read by queries.  Ranking runs over the whole
catalogue; the caller's set of usable tools filters the ranked list
afterwards, so one index serves every user.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .models import ToolInfo

__all__ = ["SearchHit", "ToolIndex", "summary_of"]

SUMMARY_CHARS = 160
# Column weights for bm25(): name, description, parameters.
_WEIGHTS = (3.0, 1.0, 0.6)
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])")
# Words that say nothing about which tool is meant; dropped from queries only.
_STOP = frozenset(
    "a an and are as at be by can could do does for from give has have how i if in into is it its me my of on "
    "or our please show tell that the their them there these this to up us want was we what when where which "
    "who will with would you your".split()
)


@dataclass(frozen=True, slots=True)
class SearchHit:
    name: str
    server: str
    summary: str


def summary_of(description: str) -> str:
    """The first sentence of a description, at most 160 characters (cut at a word)."""
    paragraph = " ".join(description.strip().split("\n\n", 1)[0].split())
    sentence = _SENTENCE_END.split(paragraph, 1)[0]
    if len(sentence) <= SUMMARY_CHARS:
        return sentence
    cut = sentence[: SUMMARY_CHARS + 1].rsplit(" ", 1)[0] if " " in sentence[:SUMMARY_CHARS] else sentence
    return cut[: SUMMARY_CHARS - 1].rstrip(" ,;:-") + "…"


def _words(text: str) -> str:
    """`git_diff-staged` / `getCurrentTime` -> "git diff staged" / "get Current Time"."""
    return " ".join(_WORD.findall(_CAMEL.sub(" ", text)))


def _parameters(schema: dict[str, Any]) -> str:
    parts: list[str] = []
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, spec in properties.items():
            parts.append(_words(str(name)))
            if isinstance(spec, dict) and isinstance(spec.get("description"), str):
                parts.append(spec["description"])
    return " ".join(parts)


class ToolIndex:
    def __init__(self, tools: Iterable[ToolInfo]) -> None:
        self._tools = {tool.qualified_name: tool for tool in tools}
        self._order = {name: i for i, name in enumerate(self._tools)}
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute("CREATE VIRTUAL TABLE tools USING fts5(name, description, parameters, tokenize='porter unicode61')")
        self._db.executemany(
            "INSERT INTO tools(rowid, name, description, parameters) VALUES (?, ?, ?, ?)",
            [(self._order[t.qualified_name], f"{_words(t.qualified_name)} {_words(t.title or '')}", t.description,
              _parameters(t.input_schema)) for t in self._tools.values()],  # fmt: skip
        )
        self._names = list(self._tools)
        self._summaries = {name: summary_of(tool.description) for name, tool in self._tools.items()}

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def close(self) -> None:
        self._db.close()

    def hit(self, name: str) -> SearchHit:
        tool = self._tools[name]
        return SearchHit(tool.qualified_name, tool.server, self._summaries[name])

    def search(self, query: str, allowed: set[str], *, server: str | None = None, limit: int = 8) -> list[SearchHit]:
        """The best `limit` tools for `query` among `allowed` (qualified names), best first."""
        terms = [w.lower() for w in _WORD.findall(_CAMEL.sub(" ", query))]
        wanted = [w for w in terms if w not in _STOP] or terms
        if not wanted or limit <= 0:
            return []
        match = " OR ".join(f'"{w}"' for w in dict.fromkeys(wanted))
        rows = self._db.execute(
            "SELECT rowid FROM tools WHERE tools MATCH ? ORDER BY bm25(tools, ?, ?, ?)", (match, *_WEIGHTS)
        )
        hits: list[SearchHit] = []
        try:
            for (rowid,) in rows:
                name = self._names[rowid]
                if name in allowed and (server is None or self._tools[name].server == server):
                    hits.append(self.hit(name))
                    if len(hits) == limit:
                        break
        finally:
            rows.close()
        return hits
