"""``python -m astrid_airflow.cli``."""

import sys

from . import main

sys.exit(main())
