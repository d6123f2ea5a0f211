"""The spend cap observer and a dry run's cost."""

from __future__ import annotations

import pytest

from tinyeval.dataset import Case
from tinyeval.errors import InputError
from tinyeval.models import Reply
from tinyeval.runner import run
from tinyeval.scale.cost import Price
from tinyeval.scale.plan import dry_run
from tinyeval.scale.spend import SpendCap, plan_cost_line


def test_the_cap_stops_the_run_incomplete_and_says_why() -> None:
    def priced(prompt: str) -> Reply:
        return Reply("answer", usage={"input_tokens": 100_000, "output_tokens": 0})

    cases = [Case(id=f"c{i}", input=f"q{i}", expect={"contains": ["answer"]}) for i in range(50)]
    result = run(cases, generate_model=priced, observers=[SpendCap(1.0, Price(1.0, 1.0))])
    assert not result.complete and result.total == 10
    assert result.stopped_by == result.stopped_reason
    assert result.stopped_by.startswith("the spend cap of $1.00 was reached")


@pytest.mark.parametrize("max_cost, price", [(0, Price(1.0, 1.0)), (5.0, None), (True, None)])
def test_the_cap_needs_a_price_and_a_positive_amount(max_cost: float, price: Price) -> None:
    with pytest.raises(InputError, match="max_cost needs a price"):
        SpendCap(max_cost, price)


def test_a_dry_runs_cost_counts_only_what_the_cache_would_not_answer() -> None:
    plan = dry_run([Case(id="a", input="x" * 4000)], generate_model="cmd:cat")
    assert plan.billable_tokens() == 1000
    assert "about $0.0010 at" in plan_cost_line(plan, Price(1.0, 5.0))
