import sys

from gemmlab.cli import main

sys.exit(main())
