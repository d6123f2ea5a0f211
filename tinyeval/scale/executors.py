"""Executors by scheme: a Dask cluster runs the cases (``--executor dask:local``)."""

from __future__ import annotations

import contextlib
import urllib.parse
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
    if spec != "dask:local":
        _check_address(spec)
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


def _check_address(spec: str) -> None:
    """Refuse at once a ``dask://`` address with no host, a port outside 1-65535, or a path.

    >>> _check_address("dask://[::1")
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: executor: 'dask://[::1' is not a HOST:PORT address: Invalid IPv6 URL
    """
    try:
        parts = urllib.parse.urlsplit("tcp://" + spec.removeprefix("dask://"))
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise InputError(f"{spec!r} is not a HOST:PORT address: {exc}", field="executor") from None
    if not host or port is None or port < 1 or parts.path or parts.query or parts.fragment:
        raise InputError(
            f"{spec!r} is not a HOST:PORT address (a host and a port from 1 to 65535)",
            field="executor",
        )
