"""Which attached file a tool's file parameter gets; the host never guesses.

1. The file the model names: its id, its name (or a path ending in it), or a link the host made
   to it, among every file attached in the conversation (this message's first, on a tie).
2. Else the one file whose type the server accepts (its `file_types`; a server without them
   accepts any): among this message's files, else among the conversation's.
3. Else nothing: several files fit, or none does, and the call fails with a message listing the
   files and how to name one. A parameter the model left out and need not give is then left out
   when no file fits (the tool may take its data another way)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...config.models import ServerConfig
from ...errors import ToolError
from ...files.artifacts import StoredFile

__all__ = ["FileChooser"]


def _names(value: Any, stored: StoredFile) -> bool:
    if not isinstance(value, str) or not value.strip():
        return False
    value = value.strip()
    return (
        value in (stored.id, stored.name)
        or value.endswith("/" + stored.name)
        or f"/api/files/{stored.id}/content?" in value
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _listing(files: Sequence[StoredFile]) -> str:
    return "; ".join(f"{f.name} ({f.mime}, id {f.id})" for f in files)


@dataclass(frozen=True, slots=True)
class FileChooser:
    """The files one call may get: `turn_files` attached to the message being answered, `known`
    every file of the conversation (the turn's included); `server`: the tool's server's config."""

    tool: str
    turn_files: Sequence[StoredFile]
    known: Sequence[StoredFile]
    server: ServerConfig | None = None

    def accepts(self, stored: StoredFile) -> bool:
        server = self.server
        return server is None or not server.file_types or server.handles_file(stored.name, stored.mime)

    def named(self, param: str, value: Any) -> StoredFile | None:
        """The file `value` names; raises ToolError when it names several files alike."""
        matches = [f for f in self.known if _names(value, f)]
        if len(matches) > 1:
            turn_ids = {f.id for f in self.turn_files}
            in_turn = [f for f in matches if f.id in turn_ids]
            matches = in_turn if in_turn else matches
        if len(matches) > 1:
            raise self._refusal(param, f"{_shown(value)} names {len(matches)} attached files", matches)
        return matches[0] if matches else None

    def fitting(self) -> list[StoredFile]:
        """The files the server accepts: this message's, else the conversation's."""
        for group in (self.turn_files, self.known):
            fit = [f for f in group if self.accepts(f)]
            if fit:
                return fit
        return []

    def one(self, param: str, value: Any, *, asked: bool) -> StoredFile | None:
        """The file for a single-file parameter; None: leave the parameter out. `asked`: the model
        gave a value or the tool requires one."""
        named = self.named(param, value)
        if named is not None:
            return named
        fit = self.fitting()
        if len(fit) == 1:
            return fit[0]
        if fit:
            raise self._refusal(param, f"{len(fit)} attached files could go to '{param}'", fit)
        if asked:
            raise self._refusal(param, self._none_fits(), self.known)
        return None

    def several(self, param: str, values: Any, *, asked: bool) -> list[StoredFile]:
        """The files for a list parameter: the ones named, else every file that fits."""
        values = [values] if isinstance(values, str) else values
        given = [v for v in values if v not in (None, "")] if isinstance(values, list) else []
        if given:
            chosen = [self.named(param, v) for v in given]
            unnamed = [v for v, f in zip(given, chosen, strict=True) if f is None]
            if unnamed:
                raise self._refusal(
                    param, f"{', '.join(_shown(v) for v in unnamed)} names no attached file", self.known, plural=True
                )
            return list({f.id: f for f in chosen if f is not None}.values())
        fit = self.fitting()
        if not fit and asked:
            raise self._refusal(param, self._none_fits(), self.known, plural=True)
        return fit

    def _none_fits(self) -> str:
        types = ", ".join(self.server.file_types) if self.server is not None else ""
        return f"no attached file is of a type this tool's server takes ({types})"

    def _refusal(self, param: str, problem: str, files: Sequence[StoredFile], *, plural: bool = False) -> ToolError:
        first = (files or self.known)[0]
        same_name = sum(f.name == first.name for f in files) > 1
        example = f'"{first.id if same_name else first.name}"'
        example = f"[{example}]" if plural else example
        return ToolError(
            f"The tool '{self.tool}' was not run: {problem}. Attached in this conversation: {_listing(self.known)}. "
            f"Name the file to use in '{param}' by its name or id (e.g. \"{param}\": {example}), "
            "or ask the user which file they mean or to attach the right one."
        )
