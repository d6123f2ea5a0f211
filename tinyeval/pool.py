"""Cases on threads: a pool whose workers never hold up the interpreter's exit, and the
futures of a pool taken as they finish.

======================  =====================================================
``DaemonThreadPool(n)``  an executor of ``n`` daemon threads
``Finished()``          the futures watched, as they finish, without ``cf.wait``
======================  =====================================================
"""

from __future__ import annotations

import concurrent.futures as cf
import queue
import threading
from collections.abc import Callable, Container
from typing import Any, Generic, TypeVar

__all__ = ["DaemonThreadPool", "Finished"]

_T = TypeVar("_T")


class DaemonThreadPool(cf.Executor):
    """A small thread pool whose workers never hold up the interpreter's exit.

    :class:`concurrent.futures.ThreadPoolExecutor` joins its threads when the
    interpreter exits, so a case abandoned past its timeout would keep a
    finished run from ending. These workers are daemon threads instead.

    >>> with DaemonThreadPool(2) as pool:
    ...     [f.result() for f in [pool.submit(pow, 2, n) for n in range(4)]]
    [1, 2, 4, 8]
    """

    def __init__(self, workers: int) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"tinyeval-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        """Queue ``fn(*args, **kwargs)`` and return its future."""
        future: cf.Future[Any] = cf.Future()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, args, kwargs = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the workers once the queued jobs are done (or cancelled)."""
        if cancel_futures:
            while True:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job[0].cancel()
        for _ in self._threads:
            self._jobs.put(None)
        if wait:
            for thread in self._threads:
                thread.join()


class Finished(Generic[_T]):
    """The futures given to :meth:`watch`, as they finish. Each puts itself on a queue when
    done, so waiting costs the same however many are in flight (:func:`cf.wait` sets up and
    takes down a waiter on every pending future, each time it is called).

    >>> finished = Finished()
    >>> with DaemonThreadPool(2) as pool:
    ...     futures = {pool.submit(pow, 2, n) for n in range(3)}
    ...     for future in futures:
    ...         finished.watch(future)
    ...     done = set()
    ...     while len(done) < 3:
    ...         done |= finished.take(5.0, futures)
    >>> sorted(future.result() for future in done)
    [1, 2, 4]
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[cf.Future[_T]] = queue.SimpleQueue()

    def watch(self, future: cf.Future[_T]) -> None:
        """Have ``future`` come out of :meth:`take` once it is done (cancelled included)."""
        future.add_done_callback(self._queue.put)

    def take(self, wait: float | None, among: Container[cf.Future[_T]]) -> set[cf.Future[_T]]:
        """The finished futures still ``among`` those wanted: waiting up to ``wait`` seconds
        for the first (None: as long as it takes), then taking every other one already there."""
        done = set()
        try:
            future = self._queue.get(timeout=wait)
            while True:
                if future in among:  # not one dropped already (cancelled, or past its timeout)
                    done.add(future)
                future = self._queue.get_nowait()
        except queue.Empty:
            return done
