#!/usr/bin/env python3
"""`trtplugins build`: build an engine with the plugins (--help says more)."""
import sys

from _command import command

main = command("build")

if __name__ == "__main__":
    sys.exit(main())
