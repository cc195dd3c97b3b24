#!/usr/bin/python3
"""Runs a document's commands as written, in order, the way a reader would.

A ```sh block is commands; a ```python block whose first line is
`# NAME.py` is a file the reader writes (here: into the work directory);
any other block is output or an excerpt, and is not run. The commands run
in one bash script (`set -euo pipefail`, aliases on), in a work directory
that looks like a built checkout: `python`, `examples` and `utils` link to
the repository's, `build/bin` to the build's tools (BRAID_BIN), and the
rest of `build/` is the document's to write. The script is printed first,
each command is echoed as it runs (`set -x`), and the exit status is the
script's.

`--skip REGEX` leaves out the command lines it matches (a command that is
a test of its own, such as the README's test command, which is this
suite), each printed as skipped.

usage: /usr/bin/python3 utils/doc-commands.py DOC.md [--work DIR] [--list]
       [--skip REGEX]...
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(text):
    """(language, first line number, lines) of each fenced block."""
    out, lang, start, lines = [], None, 0, []
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m and lang is None:
            lang, start, lines = m.group(1), number + 1, []
        elif line.strip() == "```" and lang is not None:
            out.append((lang, start, lines))
            lang = None
        elif lang is not None:
            lines.append(line)
    if lang is not None:
        sys.exit("doc-commands: the block at line %d is not closed" % start)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("doc")
    parser.add_argument("--work", help="the work directory (default: a new temporary one)")
    parser.add_argument("--list", action="store_true", help="print the script, run nothing")
    parser.add_argument("--skip", action="append", default=[],
                        help="leave out command lines that match this regular expression")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bin_dir = os.environ.get("BRAID_BIN", os.path.join(root, "build", "bin"))
    with open(args.doc) as f:
        found = blocks(f.read())
    files, script = {}, ["set -euo pipefail", "shopt -s expand_aliases", "set -x"]
    for lang, start, lines in found:
        if lang == "sh":
            script.append("# %s:%d" % (os.path.basename(args.doc), start))
            for line in lines:
                if any(re.search(r, line) for r in args.skip):
                    script.append(": skipped: " + shlex.quote(line.strip()))
                else:
                    script.append(line)
        elif lang == "python" and lines and re.match(r"^# [\w./-]+\.py$", lines[0]):
            files[lines[0][2:]] = "\n".join(lines) + "\n"
    if len(script) == 3:
        sys.exit("doc-commands: %s has no ```sh block" % args.doc)
    text = "\n".join(script) + "\n"
    print(text)
    if args.list:
        return 0
    work = args.work or tempfile.mkdtemp(prefix="braid-doc-")
    os.makedirs(os.path.join(work, "build"), exist_ok=True)
    for name in ("python", "examples", "utils"):
        link = os.path.join(work, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join(root, name), link)
    link = os.path.join(work, "build", "bin")
    if not os.path.lexists(link):
        os.symlink(os.path.abspath(bin_dir), link)
    for name, body in files.items():
        with open(os.path.join(work, name), "w") as f:
            f.write(body)
    print("doc-commands: %d commands blocks, %d files, in %s" % (
        sum(1 for lang, _, _ in found if lang == "sh"), len(files), work), flush=True)
    p = subprocess.run(["bash", "-c", text], cwd=work)
    print("doc-commands: %s: exit %d" % (os.path.basename(args.doc), p.returncode))
    if p.returncode == 0 and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
