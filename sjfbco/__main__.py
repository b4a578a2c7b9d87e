import sys

from sjfbco.cli import main

sys.exit(main())
