"""What every tool script here runs: a `trtplugins` command of the installed package.

Only when trtplugins is not installed does this clone's copy serve, appended to sys.path (never
put in front of it), so a clone cannot shadow the installed package with other code. Running
the clone's code means installing it: `pip install -e .`."""

import importlib.util
import sys
from pathlib import Path


def command(name: str):
    """main(argv=None) running `trtplugins NAME ARGS...`."""

    def main(argv=None) -> int:
        if importlib.util.find_spec("trtplugins") is None:
            sys.path.append(str(Path(__file__).resolve().parents[1]))
        from trtplugins.cli import main as cli_main

        return cli_main([name, *(sys.argv[1:] if argv is None else argv)])

    return main
