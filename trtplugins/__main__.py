"""`python -m trtplugins [COMMAND ...]`: the `trtplugins` command (alone: `trtplugins info`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
