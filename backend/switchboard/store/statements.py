"""The statements of the store's frequent calls, built once with bound parameters: a call binds
values to an already compiled statement (SQLAlchemy's compiled cache), and builds nothing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, String, Text, bindparam, delete, exists, func, insert, literal, null, select, update

from .models import UTCDateTime, allowances, conversations, files, live_turns, messages

__all__ = [
    "ALLOWANCES",
    "BUMP",
    "BUMP_UNDER_PARENT",
    "CONVERSATION",
    "CONVERSATION_OF_TWO",
    "CREATE_WITH_FIRST",
    "EXISTS",
    "FILES",
    "INSERT_CONVERSATION",
    "INSERT_MESSAGE",
    "MESSAGES",
    "MESSAGES_AFTER",
    "NEXT_SEQ",
    "ONE_STATEMENT_ADD",
    "RELEASE_CLAIM",
    "SET_LEVELS",
    "SET_MODEL",
]

_c, _m = conversations.c, messages.c
CONVERSATION = select(conversations).where(_c.id == bindparam("cid"))
# one of two ids (a conversation a client picked may be stored under either): one round trip
CONVERSATION_OF_TWO = select(conversations).where(_c.id.in_([bindparam("cid"), bindparam("cid2")]))
MESSAGES = select(messages).where(_m.conversation_id == bindparam("cid")).order_by(_m.seq)
# the messages written after those a process holds (chat/prepared_contexts.py)
MESSAGES_AFTER = MESSAGES.where(_m.seq > bindparam("after"))
ALLOWANCES = select(allowances.c.key).where(allowances.c.conversation_id == bindparam("cid"))
FILES = select(files.c.file_id).where(files.c.conversation_id == bindparam("cid")).order_by(files.c.file_id)
INSERT_CONVERSATION = insert(conversations)
# A new message moves the conversation's leaf. Updating the row first takes its lock (Postgres) or
# the write lock (SQLite), so concurrent writers take turns and each then reads the highest seq
# after the other's commit (the unique index on (conversation_id, seq) backs this up).
BUMP = (
    update(conversations)
    .where(_c.id == bindparam("cid"))
    .values(leaf_id=bindparam("new_leaf"), updated_at=bindparam("now"), message_count=_c.message_count + 1)
)
BUMP_UNDER_PARENT = BUMP.where(exists().where(_m.id == bindparam("parent"), _m.conversation_id == bindparam("cid")))
NEXT_SEQ = select(func.coalesce(func.max(_m.seq), 0) + 1).where(_m.conversation_id == bindparam("seq_of"))
INSERT_MESSAGE = insert(messages).values(seq=NEXT_SEQ.scalar_subquery()).returning(_m.seq)


# A turn's claim on its conversation (several processes on one Postgres: live.py), deleted by the
# transaction that stores the answer's last message.
_live = live_turns.c
RELEASE_CLAIM = delete(live_turns).where(
    _live.conversation_id == bindparam("cid"), _live.process_id == bindparam("claim_pid")
)


def _bump_and_insert(under_parent: bool, release: bool = False) -> Any:
    """Postgres: ``add_message`` as one statement, ``WITH bumped AS (UPDATE conversations ...)
    INSERT INTO messages ... SELECT ... FROM bumped`` (one round trip, no BEGIN/COMMIT). The seq is
    the count the UPDATE returns: it reads the row after any concurrent writer's commit (row lock),
    where the statement's own snapshot of ``messages`` may be older; max(seq) + 1 guards a
    conversation whose count is behind its messages. With ``release``, the statement also deletes
    the turn's claim (``released AS (DELETE FROM live_turns ... WHERE the row was bumped)``)."""
    bumped = (BUMP_UNDER_PARENT if under_parent else BUMP).returning(_c.message_count).cte("bumped")
    values = select(
        bindparam("mid", type_=String),
        bindparam("cid", type_=String),
        bindparam("parent", type_=String),
        func.greatest(bumped.c.message_count, NEXT_SEQ.scalar_subquery()),
        bindparam("m_role", type_=String),
        bindparam("m_content", type_=Text),
        bindparam("m_data", type_=messages.c.data.type),
        bindparam("now", type_=UTCDateTime()),
    ).select_from(bumped)
    columns = ["id", "conversation_id", "parent_id", "seq", "role", "content", "data", "created_at"]
    statement = insert(messages).from_select(columns, values).add_cte(bumped)
    if release:
        released = (
            delete(live_turns)
            .where(
                _live.conversation_id == bindparam("cid", type_=String),
                _live.process_id == bindparam("claim_pid", type_=String),
                exists(select(bumped.c.message_count)),
            )
            .returning(_live.process_id)
            .cte("released")
        )
        statement = statement.add_cte(released)
    return statement.returning(_m.seq)


SET_MODEL = update(conversations).where(_c.id == bindparam("cid")).values(model=bindparam("new_model"))
SET_LEVELS = (
    update(conversations)
    .where(_c.id == bindparam("cid"))
    .values(compliance_level=bindparam("new_level"), levels_used=bindparam("new_levels"), updated_at=bindparam("now"))
)
EXISTS = select(_c.id).where(_c.id == bindparam("cid"))
# by (under a parent, releasing the turn's claim)
ONE_STATEMENT_ADD = {
    (parent, release): _bump_and_insert(parent, release) for parent in (False, True) for release in (False, True)
}


def _create_with_first() -> Any:
    """Postgres: a new conversation with its first message as one statement, ``WITH created AS
    (INSERT INTO conversations ... RETURNING id) INSERT INTO messages ... SELECT ... FROM created``
    (one round trip, no BEGIN/COMMIT): the row is written with the message as its leaf and a
    count of one, so nothing needs updating after. The foreign key is checked at the end of the
    statement, when the conversation's row is there. A taken id fails the whole statement."""
    now = bindparam("now", type_=UTCDateTime())
    created = (
        insert(conversations)
        .values(
            id=bindparam("cid", type_=String),
            owner=bindparam("c_owner", type_=String),
            title=bindparam("c_title", type_=Text),
            model=bindparam("c_model", type_=String),
            compliance_level=bindparam("c_level", type_=String),
            levels_used=bindparam("c_levels", type_=_c.levels_used.type),
            leaf_id=bindparam("mid", type_=String),
            message_count=literal(1, Integer),
            created_at=now,
            updated_at=now,
        )
        .returning(_c.id)
        .cte("created")
    )
    values = select(
        bindparam("mid", type_=String),
        created.c.id,
        null(),
        literal(1, Integer),
        bindparam("m_role", type_=String),
        bindparam("m_content", type_=Text),
        bindparam("m_data", type_=messages.c.data.type),
        now,
    ).select_from(created)
    columns = ["id", "conversation_id", "parent_id", "seq", "role", "content", "data", "created_at"]
    return insert(messages).from_select(columns, values).add_cte(created).returning(_m.seq)


CREATE_WITH_FIRST = _create_with_first()
