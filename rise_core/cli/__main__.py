"""`python -m rise_core.cli ...` runs the `rise` command."""

import sys

from . import main

sys.exit(main())
