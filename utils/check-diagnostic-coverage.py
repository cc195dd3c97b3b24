#!/usr/bin/env python3
"""Checks that every diagnostic the braid dialect can emit is tested.

For each `emitOpError`/`emitError`/`emitOptionalError`/`inferError` statement in the
dialect's C++ sources, takes the longest string literal of the message and
looks for it in the expected diagnostics of the lit tests: an
`expected-error`/`expected-warning`/`expected-remark` annotation, or a
positive FileCheck directive (CHECK:, or another prefix, with -NEXT, -SAME,
-DAG, -LABEL). A RUN line, a CHECK-NOT (which asserts a message is absent)
or a lit keyword (REQUIRES:, UNSUPPORTED:, XFAIL:) does not count. Prints
each untested message and exits 1 if there is any.

Usage: check-diagnostic-coverage.py TEST_DIR SRC_DIR...
"""

import pathlib
import re
import sys

EMIT = re.compile(r"(emitOpError|emitError|emitOptionalError|inferError)\s*\(")
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def messages(src_dir):
    for path in sorted(list(pathlib.Path(src_dir).glob("*.cpp")) + list(pathlib.Path(src_dir).glob("*.h"))):
        text = path.read_text()
        for m in EMIT.finditer(text):
            end = text.find(";", m.end())
            statement = text[m.start():end]
            # A diagnostic that guards an internal invariant, which no input
            # can reach, is marked so on the line before it.
            previous = text[:m.start()].rstrip().rsplit("\n", 3)[-3:]
            if any("not reachable from input" in line for line in previous):
                continue
            literals = [s.strip() for s in LITERAL.findall(statement)]
            literals = [s for s in literals if len(s) > 3]
            if literals:
                line = text.count("\n", 0, m.start()) + 1
                yield "%s:%d" % (path.name, line), max(literals, key=len)


EXPECTED = re.compile(r"expected-(error|warning|remark)")
DIRECTIVE = re.compile(r"\s*(//|#|;)?\s*([A-Z][A-Z0-9_]*(?:-[A-Z][A-Z0-9_]*)*)\s*:")
LIT_KEYWORDS = {"RUN", "REQUIRES", "UNSUPPORTED", "XFAIL", "ALLOW_RETRIES", "END"}


def is_expectation(line):
    """True for a line that asserts a message appears."""
    if EXPECTED.search(line):
        return True
    m = DIRECTIVE.match(line)
    if not m:
        return False
    name = m.group(2)
    if name in LIT_KEYWORDS or name.endswith("-NOT") or name.endswith("-COUNT"):
        return False
    return True


def expectations(test_dir):
    found = []
    for path in pathlib.Path(test_dir).rglob("*"):
        if path.suffix not in (".mlir", ".test") or not path.is_file():
            continue
        for line in path.read_text().splitlines():
            if is_expectation(line):
                found.append(line)
    return "\n".join(found)


def main(test_dir, *src_dirs):
    tested = expectations(test_dir)
    found = [m for src_dir in src_dirs for m in messages(src_dir)]
    missing = [(where, msg) for where, msg in found if msg not in tested]
    for where, msg in missing:
        print("untested diagnostic at %s: \"%s\"" % (where, msg))
    total = len(found)
    print("%d of %d diagnostics tested" % (total - len(missing), total))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
