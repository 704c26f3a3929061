"""``python -m commlab``: the command line (:mod:`commlab.cli`)."""
import sys

from .cli import main

sys.exit(main())
