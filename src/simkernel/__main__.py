"""``python -m simkernel``: the same command line as the ``simkernel`` console script."""

import sys

from simkernel.cli import main

if __name__ == "__main__":
    sys.exit(main())
