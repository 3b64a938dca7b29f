"""``python -m magdash`` entry point."""

import sys

from magdash.cli import main

sys.exit(main())
