#!/usr/bin/env python3
"""Launch DenseHMM Studio: ``python main.py [FILES...]``."""
import sys

if __name__ == "__main__":
    import multiprocessing
    multiprocessing.freeze_support()  # training worker processes in a frozen bundle
    from app.main import main
    sys.exit(main())
