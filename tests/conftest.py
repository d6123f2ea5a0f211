"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest

from tinyeval import checks


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every build of an expect block's checks."""
    counted: list[int] = []
    original = checks.checks_from_expect

    def counting(expect):  # type: ignore[no-untyped-def]
        counted.append(1)
        return original(expect)

    monkeypatch.setattr(checks, "checks_from_expect", counting)
    return counted
