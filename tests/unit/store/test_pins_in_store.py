"""Tool pins kept in the store: the first definition any process sees wins,
and no process can erase another's pins (the old pins file was last-writer-wins)."""

import json

from switchboard.store import open_store
from switchboard.tools.pins import ToolPins, definition_hash

SCHEMA = {"type": "object"}


async def test_two_processes_pin_different_tools_and_a_third_sees_both(store_url):
    one, two, three = [await open_store(store_url) for _ in range(3)]
    try:
        first, second = ToolPins(), ToolPins()
        await first.use(one)
        await second.use(two)
        first.check("git", "status", "Show status", SCHEMA, {})
        second.check("time", "now", "The time", SCHEMA, {})
        await first.flush()
        await second.flush()

        later = ToolPins()
        await later.use(three)
        assert later.check("git", "status", "Show status", SCHEMA, {})[1] is False
        assert later.check("time", "now", "The time", SCHEMA, {})[1] is False
        assert later.check("git", "status", "Now deletes the repo", SCHEMA, {})[1] is True
    finally:
        for store in (one, two, three):
            await store.close()


async def test_the_first_writer_wins_and_the_later_process_learns_the_change(store_url):
    one, two = await open_store(store_url), await open_store(store_url)
    changes = []
    try:
        early, late = ToolPins(), ToolPins(on_change=lambda: changes.append("rebuild"))
        await early.use(one)
        await late.use(two)  # loaded before either pinned anything
        early.check("s", "t", "the trusted one", SCHEMA, {})
        await early.flush()
        assert late.check("s", "t", "a different one", SCHEMA, {}) == (
            definition_hash("a different one", SCHEMA, {}),
            False,
        )
        await late.flush()
        assert changes == ["rebuild"]
        assert late.check("s", "t", "a different one", SCHEMA, {})[1] is True
        assert late.check("s", "t", "the trusted one", SCHEMA, {})[1] is False
    finally:
        await one.close()
        await two.close()


async def test_an_accepted_definition_replaces_the_pin_for_everyone(store_url):
    one, two = await open_store(store_url), await open_store(store_url)
    try:
        pins = ToolPins()
        await pins.use(one)
        pins.check("s", "t", "old", SCHEMA, {})
        pins.accept("s", "t", "new", SCHEMA, {})
        await pins.flush()
        other = ToolPins()
        await other.use(two)
        assert other.check("s", "t", "new", SCHEMA, {})[1] is False
    finally:
        await one.close()
        await two.close()


async def test_a_pins_file_of_an_older_version_is_imported_once(store_url, tmp_path):
    legacy = tmp_path / "tool-pins.json"
    digest = definition_hash("kept", SCHEMA, {})
    legacy.write_text(json.dumps({"s/t": {"hash": digest, "definition": {"description": "kept"}}}))
    store = await open_store(store_url)
    try:
        pins = ToolPins()
        await pins.use(store, legacy_file=legacy)
        assert pins.check("s", "t", "kept", SCHEMA, {})[1] is False
        assert pins.check("s", "t", "changed", SCHEMA, {})[1] is True
        assert not legacy.exists() and (tmp_path / "tool-pins.json.imported").exists()
    finally:
        await store.close()
