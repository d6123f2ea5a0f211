"""Writing a file all or nothing.

A results, labels or report file is either the old one or the complete new
one, never half written: the text goes to a temporary file beside the target,
which then replaces it in one rename.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_text_atomically"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` in one step: readers see the old file or the new one.

    The new file gets the usual permissions (0o666 less the umask), not the
    private ones of a temporary file; a failure leaves no temporary file behind.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     target = os.path.join(folder, "report.md")
    ...     write_text_atomically(target, "# ok\\n")
    ...     open(target, encoding="utf-8").read(), sorted(os.listdir(folder))
    ('# ok\\n', ['report.md'])
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".partial", dir=target.parent
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
