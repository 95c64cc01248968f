"""Task rows in the store, on SQLite and on a real Postgres: listing by owner and conversation,
state updates, and the leases that say which process polls a task."""

import asyncio

from switchboard.store.tasks import TaskRecords


async def add(records, id, owner="ann@example.com", conversation="conv-aaaa1", lease_owner="p-1", lease_s=30.0):
    return await records.add(
        id=id,
        task_id=f"server-{id}",
        owner=owner,
        conversation_id=conversation,
        server="tasker",
        tool="tasker_crunch",
        call_id=f"call-{id}",
        status="working",
        message=None,
        poll_interval_ms=200,
        lease_owner=lease_owner,
        lease_s=lease_s,
    )


async def test_tasks_are_listed_for_their_owner_newest_first_and_updated(store):
    records = TaskRecords(store)
    await add(records, "t1")
    await asyncio.sleep(0.01)
    await add(records, "t2", conversation="conv-bbbb2")
    await add(records, "t3", owner="bob@example.com")
    assert [t.id for t in await records.of_owner("ann@example.com")] == ["t2", "t1"]
    assert [t.id for t in await records.of_owner("ann@example.com", "conv-aaaa1")] == ["t1"]
    assert [t.id for t in await records.of_owner("bob@example.com")] == ["t3"]

    await records.update("t1", status="completed", message="done", result={"ok": True, "content": "42"})
    t1 = await records.get("t1")
    assert t1 is not None and t1.status == "completed" and not t1.active and t1.result == {"ok": True, "content": "42"}
    assert t1.updated_at >= t1.created_at
    assert await records.get("nope") is None


async def test_a_process_holds_its_leases_and_takes_lapsed_or_released_ones(store):
    records = TaskRecords(store)
    await add(records, "mine", lease_owner="p-1")
    await add(records, "lapsed", lease_owner="p-dead", lease_s=-1)  # its process died a while ago
    await add(records, "other", lease_owner="p-2")
    await add(records, "finished", lease_owner="p-dead", lease_s=-1)
    await records.update("finished", status="completed")

    taken = {t.id for t in await records.lease("p-1", 30)}
    assert taken == {"mine", "lapsed"}  # not another live process's, nor a finished one
    assert {t.id for t in await records.lease("p-2", 30)} == {"other"}

    await records.release("p-1")  # p-1 stops: p-2 takes its tasks at once
    assert {t.id for t in await records.lease("p-2", 30)} == {"mine", "lapsed", "other"}


async def test_an_owner_gets_at_most_most_active_tasks_however_many_are_added_at_once(store):
    records = TaskRecords(store)
    await add(records, "done-one")
    await records.update("done-one", status="completed")  # a finished task does not count
    await add(records, "bobs", owner="bob@example.com")  # nor another user's

    async def one(n: int):
        return await records.add(
            id=f"t{n}",
            task_id=f"s{n}",
            owner="ann@example.com",
            conversation_id="conv-aaaa1",
            server="tasker",
            tool="tasker_crunch",
            call_id=f"c{n}",
            status="working",
            message=None,
            poll_interval_ms=None,
            lease_owner="p-1",
            lease_s=30,
            most_active=3,
        )

    added = await asyncio.gather(*(one(n) for n in range(8)))

    assert sum(r is not None for r in added) == 3
    assert await records.active_of("ann@example.com") == 3 and await records.active_of("bob@example.com") == 1
