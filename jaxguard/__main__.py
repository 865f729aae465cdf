import sys

from jaxguard.cli import main

sys.exit(main())
