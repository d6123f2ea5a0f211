"""The review queue (``review_out``): a run observer writing the rows whose judge votes split."""

from __future__ import annotations

from typing import Any

from ..records import Row, write_row
from ..runner import Observer, RunResult


class ReviewQueue(Observer):
    """Writes each row with a non-unanimous verdict (of votes or of jurors) to ``path``, as the
    rows finish; a resumed run adds to the file.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "review.jsonl")
    >>> queue = ReviewQueue(path)
    >>> queue.row({"id": "a", "judges": {"tone": {"unanimous": False}}}, RunResult())
    >>> queue.row({"id": "b", "judges": {"tone": {"unanimous": True}}}, RunResult())
    >>> queue.summary()[0].startswith("non-unanimous verdicts for review: 1 (in ")
    True
    """

    name = "review_out"

    def __init__(self, path: str, *, resume: bool = False) -> None:
        self.path, self.rows = path, 0
        open(path, "a" if resume else "w", encoding="utf-8").close()  # the file is there at once

    def row(self, row: Row, result: RunResult) -> None:
        if not all(verdict.get("unanimous", True) for verdict in row["judges"].values()):
            with open(self.path, "a", encoding="utf-8") as review:
                write_row(review, row)
            self.rows += 1

    def summary(self) -> list[str]:
        return [f"non-unanimous verdicts for review: {self.rows} (in {self.path})"]

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "rows"}``: the file and the rows written to it."""
        return {"path": self.path, "rows": self.rows}


def make(settings: Any, ready: Any) -> ReviewQueue:
    """The review queue of a run's settings (``review_out``, ``resume``)."""
    return ReviewQueue(settings.review_out, resume=settings.resume)
