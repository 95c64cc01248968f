"""The host's half of the Skills extension (`io.modelcontextprotocol/skills`, SEP-2640).

A server that declares the extension lists its skills with `skills/list`: each entry names its
`SKILL.md` (a `skill://` resource), the frontmatter (name, description) and, unless `dynamic`,
every file of the skill with its sha256 digest and size. The host lists skills when it connects
(and again when the server's lists change) and reads no file before the model uses a skill. A
file read later is verified against its entry: the byte length, the digest, and for `SKILL.md`
the frontmatter field by field. Content that fails is never used (`SkillRejected`)."""

from __future__ import annotations

import base64
import hashlib
import logging
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types
import yaml
from fastmcp.skills.client import SkillsClientExtension
from fastmcp.skills.models import ListSkillsParams, Skill
from mcp.client.session import ClientSession
from mcp_types import Result
from pydantic import ConfigDict, Field, ValidationError

from ..errors import SkillRejected

__all__ = [
    "SKILLS_EXTENSION_ID",
    "SkillEntry",
    "SkillFile",
    "SkillsClientExtension",
    "bytes_of",
    "declares_skills",
    "list_skills",
    "text_of",
    "verify_skill_file",
]

log = logging.getLogger("switchboard.tools")

SKILLS_EXTENSION_ID = "io.modelcontextprotocol/skills"
MAX_PAGES = 20  # a server that keeps handing out cursors is not listed for ever


@dataclass(frozen=True, slots=True)
class SkillFile:
    uri: str
    digest: str  # "sha256:<hex>"
    size: int


@dataclass(frozen=True, slots=True)
class SkillEntry:
    server: str
    uri: str  # its SKILL.md
    name: str
    description: str
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...] | None  # None: `dynamic` (the server lists no manifest)

    def file(self, uri: str) -> SkillFile | None:
        return next((f for f in self.files or () if f.uri == uri), None)

    @property
    def folder(self) -> str:
        return self.uri.rsplit("/", 1)[0] + "/"


class _Listed(Result):
    model_config = ConfigDict(populate_by_name=True)
    skills: list[dict[str, Any]] = Field(default_factory=list)
    next_cursor: str | None = Field(default=None, alias="nextCursor")


class _List(mcp_types.Request[ListSkillsParams, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: ListSkillsParams


def declares_skills(capabilities: mcp_types.ServerCapabilities | None) -> bool:
    return bool(capabilities and capabilities.extensions and SKILLS_EXTENSION_ID in capabilities.extensions)


async def list_skills(server: str, session: ClientSession, timeout_s: float = 30.0) -> list[SkillEntry]:
    """Every valid entry of `skills/list` (all pages); an invalid entry is left out and logged."""
    entries: list[SkillEntry] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        request = _List(params=ListSkillsParams(cursor=cursor))
        listed = await session.send_request(request, _Listed, request_read_timeout_seconds=timeout_s)
        for raw in listed.skills:
            try:
                skill = Skill.model_validate(raw)
            except ValidationError as exc:
                log.info("server %s lists a skill that is not valid (%d problems); left out", server, exc.error_count())
                continue
            files = (
                None
                if skill.resources == "dynamic"
                else tuple(SkillFile(r.uri, r.digest, r.size) for r in skill.resources)
            )
            entries.append(
                SkillEntry(
                    server=server,
                    uri=skill.uri,
                    name=skill.frontmatter.name,
                    description=skill.frontmatter.description,
                    frontmatter=dict(skill.frontmatter.root),
                    files=files,
                )
            )
        cursor = listed.next_cursor
        if not cursor:
            break
    return entries


def bytes_of(contents: list[Any]) -> bytes:
    """A read's first content as bytes (text as UTF-8, blobs decoded)."""
    for content in contents:
        if isinstance(content, mcp_types.TextResourceContents):
            return content.text.encode("utf-8")
        if isinstance(content, mcp_types.BlobResourceContents):
            return base64.b64decode(content.blob)
    raise SkillRejected("the server returned no content for the file")


def text_of(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def frontmatter_of(text: str) -> dict[str, Any] | None:
    """The YAML between the leading `---` lines, or None when there is none (or it does not parse)."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
        parsed = yaml.safe_load("\n".join(lines[1:end]))
    except (StopIteration, yaml.YAMLError):
        return None
    return parsed if isinstance(parsed, dict) else None


def verify_skill_file(entry: SkillEntry, uri: str, data: bytes) -> None:
    """Raise `SkillRejected` unless `data` is the file the entry describes."""
    listed = entry.file(uri)
    if not uri.startswith(entry.folder):
        raise SkillRejected(f"'{uri}' is not a file of the skill '{entry.name}'")
    if entry.files is not None:
        if listed is None:
            raise SkillRejected(f"'{uri}' is not a file of the skill '{entry.name}'")
        if len(data) != listed.size:
            raise SkillRejected(f"'{uri}' has {len(data):,} bytes, the skill's entry says {listed.size:,}: not used")
        if f"sha256:{hashlib.sha256(data).hexdigest()}" != listed.digest:
            raise SkillRejected(f"'{uri}' does not match the digest in the skill's entry: not used")
    if uri == entry.uri:
        found = frontmatter_of(text_of(data))
        if found is None:
            raise SkillRejected(f"the SKILL.md of '{entry.name}' has no frontmatter: the skill is not loaded")
        differ = sorted(k for k in {*found, *entry.frontmatter} if found.get(k) != entry.frontmatter.get(k))
        if differ:
            raise SkillRejected(
                f"the SKILL.md of '{entry.name}' differs from the server's listing in "
                f"{', '.join(differ)}: the skill is not loaded"
            )
