"""How to run one of braid's modules, as the user can type it."""

import sys


def module_command(module):
    """'INTERPRETER -m MODULE' with the interpreter running now: on the
    documented machine `python3` on PATH lacks torch and numpy, so the
    commands braid prints name the one that has them (/usr/bin/python3, or a
    venv's)."""
    return "%s -m %s" % (sys.executable or "python3", module)
