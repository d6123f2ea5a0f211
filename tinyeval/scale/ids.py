"""The ids of a cases file too big to hold in memory, in a temporary SQLite table.

The core's loader keeps the ids it has read as digests in memory; past a count it hands them
here (through the door ``_EXTRAS["reader"]["case_ids"]``), and a copy without this folder keeps
them in memory.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable


class CaseIds:
    """Digests of case ids on disk, written in batches: :meth:`add` gives the first repeat found
    so far, which shows when its batch is written (at the latest by :meth:`flush`).

    >>> ids = CaseIds([b"a"], batch=2)
    >>> ids.add(b"b", "b", 2), ids.add(b"a", "a", 3), ids.close()
    (None, ('a', 3), None)
    """

    def __init__(self, digests: Iterable[bytes], *, batch: int = 10_000) -> None:
        self._batch = batch
        self._pending: dict[bytes, tuple[str, int]] = {}  # in file order
        self._db = sqlite3.connect("")  # "" is a private temporary file, removed on close
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.execute("CREATE TABLE ids (digest BLOB PRIMARY KEY) WITHOUT ROWID")
        self._db.executemany("INSERT INTO ids VALUES (?)", ((d,) for d in digests))

    def add(self, digest: bytes, case_id: str, line: int) -> tuple[str, int] | None:
        """Record the id ``case_id`` (its ``digest``) read on ``line``; a repeat, or None."""
        if digest in self._pending:  # an earlier id of this batch may repeat one on disk
            return self.flush() or (case_id, line)
        self._pending[digest] = (case_id, line)
        return self.flush() if len(self._pending) >= self._batch else None

    def flush(self) -> tuple[str, int] | None:
        """Write the pending batch; the first of its ids already on disk, or None."""
        if not self._pending:
            return None
        pending, self._pending = self._pending, {}
        ordered = sorted(pending)  # inserted in key order: 1.6x faster into the B-tree
        before = self._db.total_changes
        try:
            self._db.executemany("INSERT INTO ids VALUES (?)", ((d,) for d in ordered))
        except sqlite3.IntegrityError:
            # the insert stopped at a repeat; those before it were new, and of those after it
            # (not inserted) a repeat is one already there: the first in file order is given
            failed = self._db.total_changes - before
            repeats = [ordered[failed]] + [
                d for d in ordered[failed + 1 :]
                if self._db.execute("SELECT 1 FROM ids WHERE digest = ?", (d,)).fetchone()
            ]  # fmt: skip
            return min((pending[d] for d in repeats), key=lambda found: found[1])
        return None

    def close(self) -> None:
        self._db.close()
