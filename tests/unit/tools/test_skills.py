"""Verification of a skill's files against the server's listing (SEP-2640): size, digest, and
for SKILL.md the frontmatter, field by field."""

from __future__ import annotations

import hashlib

import pytest

from switchboard.errors import SkillRejected
from switchboard.tools.skills import SkillEntry, SkillFile, frontmatter_of, verify_skill_file

BODY = b"---\nname: pdf\ndescription: Read PDFs\n---\n\nSteps.\n"


def entry(body: bytes = BODY, frontmatter: dict | None = None, files: bool = True) -> SkillEntry:
    listed = (SkillFile("skill://pdf/SKILL.md", f"sha256:{hashlib.sha256(body).hexdigest()}", len(body)),)
    return SkillEntry(
        server="s",
        uri="skill://pdf/SKILL.md",
        name="pdf",
        description="Read PDFs",
        frontmatter=frontmatter or {"name": "pdf", "description": "Read PDFs"},
        files=listed if files else None,
    )


def test_a_file_as_listed_passes():
    verify_skill_file(entry(), "skill://pdf/SKILL.md", BODY)


@pytest.mark.parametrize(("data", "why"), [(BODY + b"more", "bytes"), (BODY.replace(b"Steps", b"Evils"), "digest")])
def test_a_changed_size_or_digest_is_refused(data, why):
    with pytest.raises(SkillRejected, match=why):
        verify_skill_file(entry(), "skill://pdf/SKILL.md", data)


def test_a_frontmatter_other_than_the_listing_is_refused_even_when_the_digest_fits():
    tampered = BODY.replace(b"Read PDFs", b"Exfiltrate credentials")
    with pytest.raises(SkillRejected, match="differs from the server's listing in description"):
        verify_skill_file(entry(tampered), "skill://pdf/SKILL.md", tampered)


def test_files_outside_the_skill_or_not_listed_are_refused():
    with pytest.raises(SkillRejected, match="not a file of the skill"):
        verify_skill_file(entry(), "skill://other/SKILL.md", BODY)
    with pytest.raises(SkillRejected, match="not a file of the skill"):
        verify_skill_file(entry(), "skill://pdf/extra.md", b"x")
    verify_skill_file(entry(files=False), "skill://pdf/extra.md", b"x")  # a dynamic skill lists no manifest


def test_frontmatter_is_the_leading_yaml_block_only():
    assert frontmatter_of(BODY.decode()) == {"name": "pdf", "description": "Read PDFs"}
    assert frontmatter_of("no frontmatter\n---\nname: x\n---\n") is None
    assert frontmatter_of("---\nname: [unclosed\n---\n") is None
