"""``python -m bench`` runs the benchmark CLI."""

import sys

from bench.run import main

sys.exit(main())
