"""``python -m voxflow``: the same command line as the ``voxflow`` script."""

import sys

from voxflow.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
