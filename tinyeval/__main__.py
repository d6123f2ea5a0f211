"""``python -m tinyeval``: the command line (see :mod:`tinyeval.cli`)."""

import sys

from .cli import main

sys.exit(main())
