"""Every executor of every backend keeps the one `Executor` contract the store's modules rely on:
what `work` wrote is committed when `run` returns; work that raises leaves nothing of a
transaction and its error comes out as raised; a statement the database refuses is SQLAlchemy's
`IntegrityError` whichever connection ran it; many rows in one `execute` are written; a read sees
what was committed. A down store's executors refuse with `StoreUnavailable`."""

from datetime import UTC, datetime

import pytest
from sqlalchemy import bindparam, delete, insert, select
from sqlalchemy.exc import IntegrityError

from switchboard.errors import StoreUnavailable
from switchboard.store.engine import make_engine
from switchboard.store.executors import Executors, executors_for
from switchboard.store.migrate import migrate
from switchboard.store.models import uploads

WRITERS = ["write", "single", "write_prepared", "single_prepared"]
READERS = ["read", "read_prepared"]
TRANSACTIONS = ["write", "write_prepared"]  # (the `single` ones are given work of one statement only)

# built once, as the store's hot statements are (a prepared executor compiles each object once)
_INSERT = insert(uploads)
_IDS = select(uploads.c.id).order_by(uploads.c.id)
_ONE = select(uploads.c.id, uploads.c.size).where(uploads.c.id == bindparam("uid"))
_CLEAR = delete(uploads)


def _row(id: str, size: int = 1) -> dict[str, object]:
    return {"id": id, "owner": "ann@example.com", "size": size, "created_at": datetime(2026, 1, 1, tzinfo=UTC)}


@pytest.fixture(params=["sqlite-file", "sqlite-memory", "postgres"])
async def executors(request, tmp_path):
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
    elif request.param == "sqlite-file":
        url = f"sqlite+aiosqlite:///{tmp_path}/data/switchboard.db"
    else:
        url = "sqlite+aiosqlite:///:memory:"
    engine = make_engine(url)
    await migrate(engine)
    made = executors_for(engine, url, {})
    try:
        yield made
    finally:
        if made.threads is not None:
            made.threads.close()
        await engine.dispose()


async def _ids(executors: Executors) -> list[str]:
    return await executors.read.run(lambda conn: list(conn.execute(_IDS, {}).scalars()))


@pytest.mark.parametrize("kind", WRITERS)
async def test_what_the_work_wrote_is_committed_when_run_returns(executors, kind):
    executor = getattr(executors, kind)
    assert await executor.run(lambda conn: conn.execute(_INSERT, _row("a")).rowcount) == 1
    assert await _ids(executors) == ["a"]
    await executor.run(lambda conn: conn.execute(_INSERT, [_row("b"), _row("c")]))  # many rows, one statement
    assert await _ids(executors) == ["a", "b", "c"]
    await executor.run(lambda conn: conn.execute(_CLEAR, {}))
    assert await _ids(executors) == []


@pytest.mark.parametrize("kind", TRANSACTIONS)
async def test_work_that_raises_leaves_nothing_and_its_error_comes_out(executors, kind):
    await executors.write.run(lambda conn: conn.execute(_INSERT, _row("kept")))

    def work(conn):
        conn.execute(_INSERT, _row("lost"))
        conn.execute(_CLEAR, {})
        raise ValueError("the work changed its mind")

    with pytest.raises(ValueError, match="changed its mind"):
        await getattr(executors, kind).run(work)
    assert await _ids(executors) == ["kept"]
    await getattr(executors, kind).run(lambda conn: conn.execute(_INSERT, _row("next")))  # the executor goes on
    assert await _ids(executors) == ["kept", "next"]


@pytest.mark.parametrize("kind", WRITERS)
async def test_a_refused_statement_is_sqlalchemys_integrity_error_on_every_connection(executors, kind):
    await executors.write.run(lambda conn: conn.execute(_INSERT, _row("taken", size=5)))
    with pytest.raises(IntegrityError):
        await getattr(executors, kind).run(lambda conn: conn.execute(_INSERT, _row("taken", size=9)))
    assert await executors.read.run(lambda conn: tuple(conn.execute(_ONE, {"uid": "taken"}).one())) == ("taken", 5)


@pytest.mark.parametrize("kind", READERS)
async def test_a_read_sees_what_was_committed_and_reads_rows_the_same_way(executors, kind):
    await executors.write.run(lambda conn: conn.execute(_INSERT, [_row("a", 1), _row("b", 2)]))
    reader = getattr(executors, kind)

    def work(conn):
        one = conn.execute(_ONE, {"uid": "b"})
        return (
            list(conn.execute(_IDS, {}).scalars()),
            tuple(one.first() or ()),
            dict(conn.execute(_ONE, {"uid": "a"}).mappings().first() or {}),
            conn.execute(_ONE, {"uid": "none"}).first(),
        )

    assert await reader.run(work) == (["a", "b"], ("b", 2), {"id": "a", "size": 1}, None)


async def test_a_down_stores_executors_refuse_each_time_with_a_new_error():
    down = Executors.refusing(StoreUnavailable("cannot reach the store", action="Start it."))
    caught = []
    for kind in (*READERS, *WRITERS):
        with pytest.raises(StoreUnavailable, match="cannot reach the store") as raised:
            await getattr(down, kind).run(lambda conn: conn.execute(_IDS, {}))
        caught.append(raised.value)
    assert len({id(error) for error in caught}) == len(caught)
