"""The store's threads (`store.lanes.Lane`): results and errors reach the caller, jobs run in
order on the lane's threads, a job whose caller gave up before it started does not run, and a
closed lane runs what was queued and takes nothing more."""

import asyncio
import threading

import pytest

from switchboard.store.lanes import Lane


async def test_results_errors_and_order_on_the_lanes_own_thread():
    lane = Lane(1, "test-lane")
    ran: list[int] = []
    try:

        def work(n: int) -> str:
            ran.append(n)
            return threading.current_thread().name

        names = await asyncio.gather(*(lane.call(work, n) for n in range(20)))
        assert ran == list(range(20)) and set(names) == {"test-lane_0"}

        def fails(_: object) -> None:
            raise ValueError("no good")

        with pytest.raises(ValueError, match="no good"):
            await lane.call(fails, None)

        def stops(_: object) -> None:
            raise StopIteration  # a future cannot hold one: the caller gets a RuntimeError

        with pytest.raises(RuntimeError, match="StopIteration"):
            await lane.call(stops, None)
        assert await lane.call(lambda x: x + 1, 1) == 2  # the thread lives on after failures
    finally:
        lane.close()


async def test_a_job_whose_caller_gave_up_before_it_started_does_not_run():
    lane = Lane(1, "test-lane")
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []
    try:

        def blocking(_: object) -> None:
            started.set()
            release.wait(5)

        first = asyncio.ensure_future(lane.call(blocking, None))
        await asyncio.to_thread(started.wait, 5)
        second = asyncio.ensure_future(lane.call(ran.append, "second"))
        await asyncio.sleep(0)  # queued behind the first
        second.cancel()
        release.set()
        await first
        assert await lane.call(ran.append, "third") is None
        assert ran == ["third"] and second.cancelled()
    finally:
        lane.close()


async def test_close_runs_what_was_queued_and_then_refuses():
    lane = Lane(2, "test-lane")
    ran: list[int] = []
    calls = [asyncio.ensure_future(lane.call(ran.append, n)) for n in range(5)]
    await asyncio.sleep(0)
    await asyncio.to_thread(lane.close)
    await asyncio.gather(*calls)
    assert sorted(ran) == [0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="closed"):
        await lane.call(ran.append, 9)
