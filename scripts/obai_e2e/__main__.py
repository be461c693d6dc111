import sys

from .base import interrupts

interrupts.install()  # before the command line and its command are imported

from .cli import main  # noqa: E402

sys.exit(main())
