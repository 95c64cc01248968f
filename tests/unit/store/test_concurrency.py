"""Two store instances (as two app processes would have) on one database."""

import asyncio

from switchboard.store import open_store

WRITERS, PER_WRITER = 2, 25


async def test_concurrent_add_message_keeps_seq_unique_and_count_right(store_url):
    first, second = await open_store(store_url), await open_store(store_url)
    try:
        await first.create_conversation(
            id="shared", owner="ann@example.com", title="t", model=None, compliance_level=None
        )

        async def write(store, name):
            for i in range(PER_WRITER):
                await store.add_message("shared", id=f"{name}-{i}", parent_id=None, role="user", content=f"{name} {i}")

        await asyncio.gather(*(write(s, f"w{n}-{k}") for n, s in enumerate((first, second)) for k in range(WRITERS)))
        total = 2 * WRITERS * PER_WRITER
        stored = await second.messages("shared")
        assert [m.seq for m in stored] == list(range(1, total + 1))
        assert len({m.id for m in stored}) == total
        conv = await first.get_conversation("shared")
        assert conv.message_count == total
        assert conv.leaf_id == stored[-1].id  # the last committed message is the leaf
    finally:
        await first.close()
        await second.close()


async def test_pin_if_absent_first_writer_wins_across_instances(store_url):
    stores = [await open_store(store_url) for _ in range(2)]
    try:
        results = await asyncio.gather(
            *(
                s.pin_if_absent("git", f"tool{t}", f"digest-{n}", {"n": n})
                for t in range(10)
                for n, s in enumerate(stores)
            )
        )
        pins = await stores[0].pins()
        for t in range(10):
            winner_digest, winner_definition = pins[("git", f"tool{t}")]
            assert results[2 * t] == results[2 * t + 1] == winner_digest  # both were told the same winner
            assert winner_definition == {"n": int(winner_digest.rsplit("-", 1)[1])}
    finally:
        for s in stores:
            await s.close()


async def test_writes_that_read_first_do_not_fail_under_concurrent_writers(store_url):
    """delete_conversation reads the file links before deleting: on SQLite a transaction that
    reads and then writes would fail at once if another process wrote in between, unless the
    transaction takes the write lock from its start."""
    first, second = await open_store(store_url), await open_store(store_url)
    try:
        for n in range(40):
            await first.create_conversation(id=f"c{n}", owner="a", title="t", model=None, compliance_level=None)
            await first.link_file(f"c{n}", f"file{n}")
        await first.create_conversation(id="busy", owner="a", title="t", model=None, compliance_level=None)

        async def delete(store, ids):
            return [await store.delete_conversation(i) for i in ids]

        async def add(store, name):
            for i in range(20):
                await store.add_message("busy", id=f"{name}{i}", parent_id=None, role="user", content="x")

        results = await asyncio.gather(
            delete(first, [f"c{n}" for n in range(0, 40, 2)]),
            delete(second, [f"c{n}" for n in range(1, 40, 2)]),
            add(first, "a"),
            add(second, "b"),
        )
        assert results[0] == [[f"file{n}"] for n in range(0, 40, 2)]
        assert results[1] == [[f"file{n}"] for n in range(1, 40, 2)]
        assert (await second.get_conversation("busy")).message_count == 40
    finally:
        await first.close()
        await second.close()
