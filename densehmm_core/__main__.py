"""``python -m densehmm_core``: the ``densehmm`` command line."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
