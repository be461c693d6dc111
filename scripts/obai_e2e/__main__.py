import sys

from .base import interrupts

interrupts.install()  # before the command line and its command are imported

try:
    from .cli import main  # noqa: E402
except KeyboardInterrupt:  # a signal while the command line itself was being imported
    sys.stderr.write("obai-e2e: interrupted\n")
    sys.exit(130)  # Exit.INTERRUPTED, without importing anything more

sys.exit(main())
