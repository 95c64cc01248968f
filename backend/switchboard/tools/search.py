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
_RERANK = 40  # how many BM25 candidates the name check reorders
# Column weights for bm25(): name, description, parameters.  Parameter text is weighed
# low: it often names other tools ("the id, as returned by search_tickets").
_WEIGHTS = (5.0, 1.0, 0.2)
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])")
# Words that say nothing about which tool is meant; dropped from queries only.
_STOP = frozenset(
    "a an and are as at be by can could do does for from has have how i if in into is it its me my of on "
    "or our please show tell that the their them there these this to up us want was we what when where which "
    "who will with would you your".split()
)


# How people ask for the usual actions, and the words tool names use for them: a query
# word also searches for these (generic verbs only, nothing about particular servers).
_ALSO = {
    "remove": "delete", "erase": "delete", "forget": "delete", "drop": "delete", "rid": "delete", "destroy": "delete",
    "show": "get read list", "view": "get read", "display": "get read", "fetch": "get read", "open": "get read",
    "look": "search find get", "find": "search", "lookup": "search", "which": "list search", "all": "list",
    "make": "create new", "new": "create", "start": "create", "add": "create add", "save": "write create",
    "remember": "create add", "put": "create add", "note": "observation",
    "change": "update edit", "modify": "update edit", "edit": "update", "set": "update", "mark": "update",
    "rename": "move update", "give": "assign", "reassign": "assign", "hand": "assign", "charge": "assign",
    "responsible": "assign", "recap": "summarize", "summary": "summarize", "summarise": "summarize",
    "brief": "summarize", "download": "export", "hide": "archive", "restorable": "archive", "restored": "archive",
    "plot": "chart", "graph": "chart", "draw": "chart", "now": "current", "clock": "current time",
    "history": "log", "changed": "diff status", "plus": "sum", "total": "sum",
}  # fmt: skip


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


def _stem(word: str) -> str:
    """A crude plural/tense fold, enough to compare query words with name words."""
    for suffix, repl in (("ies", "y"), ("ys", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + repl
    return word


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
        self._name_stems = {name: {_stem(w) for w in _words(name).lower().split()} for name in self._tools}
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
        wanted = list(dict.fromkeys(w for w in terms if w not in _STOP)) or terms
        if not wanted or limit <= 0:
            return []
        # One group per query word: the word and what people mean by it.
        groups = [{_stem(w), *(_stem(x) for x in _ALSO.get(w, "").split())} for w in wanted]
        match = " OR ".join(f'"{t}"' for t in dict.fromkeys(t for w in wanted for t in (w, *_ALSO.get(w, "").split())))
        rows = self._db.execute(
            "SELECT rowid FROM tools WHERE tools MATCH ? ORDER BY bm25(tools, ?, ?, ?)", (match, *_WEIGHTS)
        )
        ranked: list[tuple[int, int, str]] = []  # (-query words its name covers, BM25 place, name)
        try:
            for place, (rowid,) in enumerate(rows):
                name = self._names[rowid]
                if name in allowed and (server is None or self._tools[name].server == server):
                    covered = sum(bool(group & self._name_stems[name]) for group in groups)
                    ranked.append((-covered, place, name))
                    if len(ranked) == max(limit, _RERANK):
                        break
        finally:
            rows.close()
        # BM25 finds the candidates; among them, a tool whose own name says more of what was
        # asked comes first ("give ticket 881 to Maria": assign_ticket, not the ticket tool
        # with the shortest description).
        return [self.hit(name) for _, _, name in sorted(ranked)[:limit]]
