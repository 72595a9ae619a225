import sys

from dmlcore.cli import main

sys.exit(main())
