#!/usr/bin/env python3
"""Launch DenseHMM Studio: ``python main.py [FILES...]``."""
import sys

if __name__ == "__main__":
    from app.main import main
    sys.exit(main())
