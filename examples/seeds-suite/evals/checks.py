"""The team's own checks, declared in tinyeval.toml's [expect] table."""

import json


def accion(output: str, expected: str, case: object) -> tuple[bool, str] | None:
    """The action the assistant took is the one expected (None: no action expected here)."""
    if not expected:
        return None
    try:
        reply = json.loads(output)
    except ValueError:
        return False, "the reply is not JSON, so it took no action"
    taken = reply.get("accion") if isinstance(reply, dict) else None
    return taken == expected, f"accion {taken!r}, expected {expected!r}"
