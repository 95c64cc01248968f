"""The store's own threads for a SQLite file: a ``Lane`` of threads that run one job at a time
each, and ``SqliteThreads``, the sqlite3 engine on the file with one writer lane and a few readers
(WAL lets them run beside the writer). A transaction runs whole on one of them: one thread hop per
transaction, where the async driver made one per statement (``executors.py`` puts them behind the
one ``Executor`` protocol)."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine

from .engine import WRITE
from .prepared import Prepared, SqliteDriver, Statements

__all__ = ["SQLITE_READERS", "Lane", "SqliteThreads"]

SQLITE_READERS = 4  # threads reading a SQLite file beside its one writer

A = TypeVar("A")
T = TypeVar("T")


class Lane:
    """Threads that run one job at a time each, taken in order from one queue, for the event loop:
    ``await lane.call(fn, arg)``. What ``run_in_executor`` on a ``ThreadPoolExecutor`` does, for
    less: no ``concurrent.futures.Future`` and its condition, no idle-thread semaphore, no future
    chained to another; the result goes straight to the caller's future by ``call_soon_threadsafe``.
    A job whose caller was cancelled before it started is skipped, as the executor skips it."""

    def __init__(self, threads: int, name: str) -> None:
        self._size, self._name = threads, name
        self._jobs: queue.SimpleQueue[tuple[Callable[[Any], Any], Any, asyncio.Future[Any]] | None] = (
            queue.SimpleQueue()
        )
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    async def call(self, fn: Callable[[A], T], arg: A) -> T:
        if not self._threads:
            self._start()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put((fn, arg, future))
        return await future

    def _start(self) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name} is closed")
            while len(self._threads) < self._size:
                thread = threading.Thread(target=self._work, name=f"{self._name}_{len(self._threads)}", daemon=True)
                thread.start()
                self._threads.append(thread)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, arg, future = job
            if future.cancelled():  # (a read of a flag the loop sets: no harm if it is set just after)
                continue
            try:
                result, failure = fn(arg), None
            except BaseException as exc:
                result, failure = None, exc
            try:
                future.get_loop().call_soon_threadsafe(_settle, future, result, failure)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

    def close(self) -> None:
        """Lets the queued jobs run, then stops the threads."""
        with self._lock:
            self._closed = True
            threads, self._threads = self._threads, []
        for _ in threads:
            self._jobs.put(None)
        for thread in threads:
            thread.join()


def _settle(future: asyncio.Future[Any], result: Any, failure: BaseException | None) -> None:
    if future.cancelled():
        return
    if failure is None:
        future.set_result(result)
    elif isinstance(failure, StopIteration):  # a future cannot hold one
        future.set_exception(RuntimeError(f"StopIteration raised in the store's work: {failure!r}"))
    else:
        future.set_exception(failure)


class SqliteThreads:
    """A sqlite3 engine on the database file, and the threads its transactions run on. Each
    thread keeps one connection of its own open (no pool check-out and reset per transaction);
    one that broke is replaced by the next transaction."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.writer = engine.execution_options(**WRITE)
        self.write_thread = Lane(1, "store-write")
        self.read_threads = Lane(SQLITE_READERS, "store-read")
        self._held = threading.local()
        self.prepared: dict[tuple[Any, ...], Prepared] = {}  # statements compiled for SqliteDriver
        self._opened: list[Connection] = []
        self._opened_lock = threading.Lock()

    def _connection(self, source: Engine) -> Connection:
        conn: Connection | None = getattr(self._held, "conn", None)
        if conn is None or conn.closed or conn.invalidated:
            conn = self._held.conn = source.connect()
            with self._opened_lock:
                self._opened = [c for c in self._opened if not c.closed] + [conn]
        return conn

    def write(self, work: Callable[[Connection], T]) -> T:
        with self._connection(self.writer).begin() as transaction:
            return work(transaction.connection)

    def write_prepared(self, work: Callable[[Statements], T]) -> T:
        driver = SqliteDriver(self._connection(self.writer), self.prepared)
        return driver.transaction(work, "BEGIN IMMEDIATE")

    def read_prepared(self, work: Callable[[Statements], T]) -> T:
        driver = SqliteDriver(self._connection(self.engine), self.prepared)
        return driver.transaction(work, "BEGIN")

    def read(self, work: Callable[[Connection], T]) -> T:
        # BEGIN (deferred): one snapshot for every statement of `work`
        with self._connection(self.engine).begin() as transaction:
            return work(transaction.connection)

    def close(self) -> None:
        self.write_thread.close()
        self.read_threads.close()
        with self._opened_lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()
        self.engine.dispose()
