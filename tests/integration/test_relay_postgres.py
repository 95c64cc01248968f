"""The relay on a real PostgreSQL, three relays (as three app processes would hold) in one event
loop: a followed turn's events reach followers once each and in order, small ones inside the
NOTIFY and large ones through `turn_events`, with a follower joining midway; events made outside
turns (pages of a conversation, a user's task events, large ones in pieces) and a reload reach
the other processes and not the sender again. The hub is the relay's seam (chat/relay/postgres.py
`TurnHub`); the turn stands for chat/turns.py `Turn` (its log is what a late listener replays)."""

from __future__ import annotations

import asyncio

import pytest

from switchboard.chat.events import TaskEvent, TokenEvent
from switchboard.chat.open_pages import ConversationPages
from switchboard.chat.questions import ApprovalAnswer
from switchboard.chat.relay.messages import ApprovalAsk, CancelAsk
from switchboard.chat.relay.postgres import PostgresRelay
from switchboard.chat.tasks.board import TaskBoard
from switchboard.errors import NotFound
from switchboard.identity.users import User
from switchboard.store import open_store
from switchboard.store.live import LiveTurns

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
ALICE = User(email="alice@example.com")
BOB = User(email="bob@example.com")
CONVERSATION = "c-relay-1"


class _Turn:
    def __init__(self) -> None:
        self.conversation_id = CONVERSATION
        self.log: list[TokenEvent] = []
        self.claimed = True  # (its answer's last write would have released it)

    def replay(self) -> list[TokenEvent]:
        return list(self.log)


class _Identities:
    """This process's identity door: groups from its configuration (here: "staff" for everyone)."""

    async def refresh(self, user: User) -> User:
        groups = user.vouched_groups | {"staff"}
        return User(
            email=user.email, groups=groups, via_token=user.via_token, vouched_groups=user.vouched_groups, admin=True
        )


class _Hub:
    def __init__(self) -> None:
        self.turns: dict[str, _Turn] = {}
        self.pages = ConversationPages()
        self.task_questions: TaskBoard | None = TaskBoard()
        self.identities = _Identities()
        self.answered: list[tuple[User, str, ApprovalAnswer]] = []

    def running(self, owner: str, conversation_id: str) -> _Turn | None:
        return self.turns.get(conversation_id) if owner == ALICE.email else None

    async def answer_approval(self, user, call_id, answer, *, local_only=False) -> None:
        if call_id != "call_here":
            raise NotFound("no approval")
        self.answered.append((user, call_id, answer))

    async def answer_elicitation(self, user, request_id, action, content, *, local_only=False) -> None:
        raise NotFound("no question")

    async def cancel(self, user, conversation_id, *, local_only=False) -> bool:
        return False


async def _relays(url: str, n: int, reloads: list[int], lease_s: float = 30) -> list[tuple[PostgresRelay, _Hub]]:
    store = await open_store(url)
    made = []
    for i in range(n):

        async def reloaded(i: int = i) -> None:
            reloads.append(i)

        relay, hub = PostgresRelay(LiveTurns(store), lease_s=lease_s, on_reload=reloaded), _Hub()
        await relay.start(hub)  # type: ignore[arg-type]
        hub.pages = ConversationPages(share=relay.to_pages)
        hub.task_questions = TaskBoard(relay)  # the host builds its board with the relay too (services.py)
        made.append((relay, hub))
    return made


async def _drain(subscription) -> list[TokenEvent]:
    return [event async for event in subscription]


def _event(n: int) -> TokenEvent:
    return TokenEvent(text="x" * 9000 if n % 50 == 7 else f"t{n} ")  # some too large for a NOTIFY payload


async def test_a_followed_turn_reaches_each_follower_once_and_in_order(postgres_url):
    (owner, owner_hub), (first, _), (late, _) = await _relays(postgres_url, 3, [])
    try:
        turn = _Turn()
        owner_hub.turns[CONVERSATION] = turn
        await owner.claim(CONVERSATION, ALICE.email)

        def publish(n: int) -> None:
            event = _event(n)
            turn.log.append(event)
            owner.published(turn, event)  # type: ignore[arg-type]

        for n in range(5):  # before anyone follows: the replay
            publish(n)
        following = await first.attach(ALICE, CONVERSATION)
        assert following is not None and await first.attach(User(email="bob@example.com"), CONVERSATION) is None
        got_first = asyncio.create_task(_drain(following))
        for n in range(5, 400):
            publish(n)
            if n % 3 == 0:  # bursts: several events gathered in one statement
                await asyncio.sleep(0.001)
            if n == 200:
                joined = await late.attach(ALICE, CONVERSATION)
                assert joined is not None
                got_late = asyncio.create_task(_drain(joined))
        await asyncio.sleep(0.05)
        again = await first.attach(ALICE, CONVERSATION)  # a second listener there: its copy, then the rest
        assert again is not None
        got_again = asyncio.create_task(_drain(again))
        publish(400)
        del owner_hub.turns[CONVERSATION]
        await owner.released(turn)  # type: ignore[arg-type]
        for task in (got_first, got_late, got_again):
            received = await asyncio.wait_for(task, 30)
            assert [e.text for e in received] == [e.text for e in turn.log]
        assert await first.attach(ALICE, CONVERSATION) is None  # over
    finally:
        for relay in (owner, first, late):
            await relay.stop()


async def test_page_and_task_events_and_a_reload_reach_the_other_processes(postgres_url):
    reloads: list[int] = []
    (a, hub_a), (b, hub_b) = await _relays(postgres_url, 2, reloads)
    try:
        assert hub_a.task_questions is not None and hub_b.task_questions is not None
        large = "y" * 30_000
        with (
            hub_a.pages.watch(ALICE.email, CONVERSATION) as here,
            hub_b.pages.watch(ALICE.email, CONVERSATION) as there,
            hub_b.pages.watch(BOB.email, CONVERSATION) as stranger,
            hub_a.pages.watch(BOB.email, CONVERSATION) as stranger_here,
            hub_b.task_questions.listen(ALICE.email) as tasks_there,
        ):
            hub_a.pages.publish(ALICE.email, CONVERSATION, TokenEvent(text="small"))
            hub_a.pages.publish(ALICE.email, CONVERSATION, TokenEvent(text=large))
            hub_a.task_questions.publish(
                ALICE.email,
                TaskEvent(
                    task_id="t1",
                    call_id="call_1",
                    conversation_id=CONVERSATION,
                    server="s",
                    tool="s_t",
                    status="working",
                ),
            )
            for queue in (here, there):
                texts = [(await asyncio.wait_for(queue.get(), 10)).text for _ in range(2)]
                assert texts == ["small", large]
            task = await asyncio.wait_for(tasks_there.get(), 10)
            assert isinstance(task, TaskEvent) and task.task_id == "t1"
            a.reloaded()
            for _ in range(100):
                if reloads:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)
            assert reloads == [1]  # the other process, once; not the one that reloaded
            assert here.empty() and there.empty()  # nothing twice
            # a page of another user's that names the same conversation id hears nothing, on either process
            assert stranger.empty() and stranger_here.empty()
    finally:
        await a.stop()
        await b.stop()


async def test_a_relay_listens_and_sends_again_after_its_connections_are_lost(postgres_url):
    """As after a restart of the database: B's listening connection and A's sending one end."""
    (a, hub_a), (b, hub_b) = await _relays(postgres_url, 2, [], lease_s=0.6)  # a heartbeat every 0.2 s
    try:
        listener = b.live._listener
        pids = [listener.get_server_pid(), a.live._sender.get_server_pid()]
        store = await open_store(postgres_url)
        for pid in pids:
            await store.transaction(
                "end a backend", lambda c, pid=pid: c.exec_driver_sql(f"SELECT pg_terminate_backend({pid})")
            )
        await store.close()
        for _ in range(100):  # its next heartbeat listens again
            if b.live._listener is not listener and not b.live._listener.is_closed():
                break
            await asyncio.sleep(0.05)
        with hub_b.pages.watch(ALICE.email, CONVERSATION) as there:
            hub_a.pages.publish(ALICE.email, CONVERSATION, TokenEvent(text="after"))
            assert (await asyncio.wait_for(there.get(), 10)).text == "after"
    finally:
        await a.stop()
        await b.stop()


async def test_one_process_claims_a_conversation_s_turn_and_its_earlier_events_go(postgres_url):
    from switchboard.store.models import turn_events

    store = await open_store(postgres_url)
    live = LiveTurns(store)
    conversation = "c-claim-1"
    try:

        async def events() -> int:
            return await store.read(
                "count",
                lambda c: len(
                    c.execute(turn_events.select().where(turn_events.c.conversation_id == conversation)).all()
                ),
            )

        await store.transaction(
            "seed",
            lambda c: c.execute(
                turn_events.insert(), [{"conversation_id": conversation, "seq": n, "body": "{}"} for n in (1, 2)]
            ),
        )
        assert await live.claim(conversation, ALICE.email, "process-a") is None
        assert await events() == 0  # a new turn's events start afresh
        await store.transaction(
            "seed",
            lambda c: c.execute(turn_events.insert(), {"conversation_id": conversation, "seq": 1, "body": "{}"}),
        )
        assert await live.claim(conversation, ALICE.email, "process-b") == "process-a"
        assert await live.claim(conversation, ALICE.email, "process-a") == "process-a"  # its own: still its own
        assert await events() == 1  # a refused claim clears nothing
        claims = await asyncio.gather(*(live.claim("c-claim-2", ALICE.email, f"p{n}") for n in range(8)))
        assert claims.count(None) == 1 and len({c for c in claims if c is not None}) == 1  # one won, the rest name it
        await live.release(conversation, "process-a")
        assert await live.claim(conversation, ALICE.email, "process-b") is None
        compiled = []
        for n in range(3):  # each turn's claim and release run statements compiled once, not per turn
            assert await live.claim(f"c-cycle-{n}", ALICE.email, "process-a") is None
            await live.release(f"c-cycle-{n}", "process-a")
            compiled.append(len(store._pg_prepared))
        assert compiled[0] == compiled[-1], compiled
    finally:
        await store.close()


async def test_an_answer_from_another_process_is_taken_as_the_user_the_identity_door_makes(postgres_url):
    """The answering process works out who the user is through its own identity door, from the
    address and the proxy's groups sent (not a bare address with no groups), and says whether it
    took the answer."""
    (a, _), (b, hub_b) = await _relays(postgres_url, 2, [])
    try:
        sent = User(email="alice@example.com", groups=frozenset({"x"}), vouched_groups=frozenset({"proxy-team"}))
        asked = ApprovalAsk(call_id="call_here", approved=True, arguments={"n": 1}, remember=True, reason="ok")
        assert await a.ask(sent, asked) is True
        [(user, call_id, answer)] = hub_b.answered
        assert user.email == "alice@example.com" and user.groups == {"proxy-team", "staff"} and user.admin
        assert call_id == "call_here" and answer == ApprovalAnswer(True, {"n": 1}, True, "ok")
        assert await a.ask(sent, ApprovalAsk(call_id="call_elsewhere", approved=False)) is False
        assert await a.ask(sent, CancelAsk(conversation_id=CONVERSATION)) is False  # no turn of hers runs anywhere
    finally:
        await a.stop()
        await b.stop()
