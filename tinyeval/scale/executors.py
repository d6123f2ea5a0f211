"""Executors by scheme: a Dask cluster runs the cases (``--executor dask:local``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import Executor

from ..errors import InputError


@contextlib.contextmanager
def open_dask(spec: str, concurrency: int = 4) -> Iterator[Executor]:
    """``dask:local`` (a local cluster of two worker processes) or ``dask://HOST:PORT`` (a
    scheduler), as a :class:`concurrent.futures.Executor`.

    >>> with open_dask("dask:x") as executor:
    ...     pass
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: executor: expected dask:local or dask://HOST:PORT, got 'dask:x'
    """
    if spec != "dask:local" and not spec.startswith("dask://"):
        raise InputError(f"expected dask:local or dask://HOST:PORT, got {spec!r}",
                         field="executor")  # fmt: skip
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("Dask's distributed scheduler is not installed: pip install "
                         "'dask[distributed]'", field="executor") from None  # fmt: skip
    cluster = None
    if spec == "dask:local":
        cluster = LocalCluster(n_workers=2, threads_per_worker=max(1, concurrency // 2),
                               processes=True, dashboard_address=None)  # fmt: skip
        client = Client(cluster)
    else:
        client = Client(spec.removeprefix("dask://"))
    try:
        yield client.get_executor()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
