"""``python -m tritium``: the ``tritium`` command."""
import sys

from .cli import main

sys.exit(main())
