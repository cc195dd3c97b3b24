#!/usr/bin/env python3
"""Mutation testing: are braid's tests able to catch the bugs they claim to?

Each mutant in utils/mutants.txt is one plausible bug, written as a source
rewrite (an exact text of one file and what replaces it), with the tests that
must catch it. For each mutant this command

  1. brings a scratch copy of the checkout up to date (build/mutants/src by
     default: the files git tracks or would track, copied when they differ,
     so that the scratch build stays incremental),
  2. applies the rewrite there, rebuilds what it touches (ninja, in the
     scratch copy's own build/; ccache, set up by utils/build.sh, makes the
     first build reuse the main build's objects),
  3. runs the named tests with lit on the scratch build,
  4. restores the file,

and prints, per mutant, `caught` (some named test failed), `survived` (all
passed: the tests miss this bug) or `broken` (the mutant did not build or
did not apply: fix the mutant), then the score. It exits 1 unless every
mutant was caught. The checkout itself is never modified.

Usage:
  utils/mutants.py                  every mutant (about an hour on 2 cores)
  utils/mutants.py --quick          the mutants marked quick (3; the test suite runs these)
  utils/mutants.py --only ID,ID     those mutants
  utils/mutants.py --list           the mutants and their tests, no build
  utils/mutants.py --check          each rewrite applies to exactly one place, no build
Options: --scratch DIR (the scratch copy), --report FILE (a JSON report).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIT = "/usr/lib/llvm-22/bin/lit"
DEFAULT_TARGETS = ["braid-opt", "braid-translate", "braid-compile", "braid-run"]
SUITES = ("test/", "integration_test/", "unittests")


class MutantError(Exception):
    pass


def unescape(text):
    return text.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")


def parse(path):
    """utils/mutants.txt: blocks of `key: value` lines under `[id]`."""
    mutants, current = [], None
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                current = {"id": line[1:-1], "line": number}
                mutants.append(current)
                continue
            key, sep, value = line.partition(": ")
            if current is None or not sep or key not in (
                    "layer", "file", "find", "replace", "tests", "targets", "why", "quick"):
                raise MutantError("%s:%d: expected '[id]' or 'key: value' (layer, file, find, "
                                  "replace, tests, targets, why, quick), got %r"
                                  % (path, number, line))
            if key in current:
                raise MutantError("%s:%d: %s given twice for mutant %s"
                                  % (path, number, key, current["id"]))
            current[key] = value
    ids = set()
    for m in mutants:
        for key in ("layer", "file", "find", "replace", "tests", "why"):
            if key not in m:
                raise MutantError("%s:%d: mutant %s has no %s" % (path, m["line"], m["id"], key))
        if m["id"] in ids:
            raise MutantError("%s:%d: mutant %s defined twice" % (path, m["line"], m["id"]))
        ids.add(m["id"])
        m["find"], m["replace"] = unescape(m["find"]), unescape(m["replace"])
        m["tests"] = m["tests"].split()
        m["targets"] = m["targets"].split() if "targets" in m else list(DEFAULT_TARGETS)
        m["quick"] = m.get("quick", "no") == "yes"
        for t in m["tests"]:
            if not t.startswith(SUITES) or not os.path.exists(os.path.join(ROOT, t)):
                raise MutantError("%s:%d: mutant %s names test %s, which does not exist "
                                  "(a path under test/, integration_test/ or unittests/)"
                                  % (path, m["line"], m["id"], t))
    return mutants


def check_applies(m, root):
    path = os.path.join(root, m["file"])
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise MutantError("mutant %s: cannot read %s: %s" % (m["id"], m["file"], e))
    count = text.count(m["find"])
    if count != 1:
        raise MutantError("mutant %s: its text occurs %d times in %s (must be once)"
                          % (m["id"], count, m["file"]))
    if m["find"] == m["replace"]:
        raise MutantError("mutant %s changes nothing" % m["id"])
    return text


def tracked_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"],
                         check=True, stdout=subprocess.PIPE).stdout
    return [p for p in out.decode().split("\0") if p]


def sync(scratch):
    """Copies the checkout's files into scratch/src where they differ, and
    removes files the checkout no longer has."""
    src = os.path.join(scratch, "src")
    files = tracked_files()
    wanted = set(files)
    copied = 0
    for rel in files:
        a, b = os.path.join(ROOT, rel), os.path.join(src, rel)
        if not os.path.isfile(a):
            continue
        with open(a, "rb") as f:
            data = f.read()
        try:
            with open(b, "rb") as f:
                same = f.read() == data
        except OSError:
            same = False
        if not same:
            os.makedirs(os.path.dirname(b), exist_ok=True)
            with open(b, "wb") as f:
                f.write(data)
            shutil.copymode(a, b)
            copied += 1
    removed = 0
    for dirpath, dirnames, filenames in os.walk(src):
        if os.path.abspath(dirpath) == os.path.join(src, "build"):
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if not (dirpath == src and d == "build")]
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            if rel not in wanted and "__pycache__" not in rel:
                os.remove(os.path.join(dirpath, name))
                removed += 1
    return src, copied, removed


def build(src, targets, log):
    """utils/build.sh of the scratch copy (it configures once, then ninja);
    the cuda backend is left out (no test here can run it)."""
    env = dict(os.environ, BRAID_CMAKE_FLAGS="-DBRAID_RUNTIME_CUDA=OFF")
    env.pop("BRAID_BUILD_DIR", None)
    with open(log, "w") as f:
        p = subprocess.run(["bash", os.path.join(src, "utils", "build.sh"), *targets],
                           stdout=f, stderr=subprocess.STDOUT, env=env)
    return p.returncode == 0


def run_tests(src, tests, log, timeout):
    """lit on the named tests of the scratch build; True if all passed."""
    paths = [os.path.join(src, "build", t) for t in tests]
    env = dict(os.environ, BRAID_REQUIRE_FEATURES="1")
    with open(log, "w") as f:
        try:
            p = subprocess.run(["/usr/bin/python3", LIT, "-v", *paths], stdout=f,
                               stderr=subprocess.STDOUT, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            f.write("\nmutants: the tests ran past %d s\n" % timeout)
            return False, "timeout"
    with open(log) as f:
        text = f.read()
    failed = [line.split("::", 1)[1].split("(")[0].strip() for line in text.splitlines()
              if line.startswith(("FAIL:", "UNRESOLVED:", "TIMEOUT:", "XPASS:"))]
    if p.returncode != 0 and not failed:
        failed = ["lit exited %d" % p.returncode]
    return p.returncode == 0, failed


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="utils/mutants.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mutants", default=os.path.join(ROOT, "utils", "mutants.txt"))
    parser.add_argument("--scratch", default=os.path.join(ROOT, "build", "mutants"))
    parser.add_argument("--quick", action="store_true", help="only the mutants marked quick")
    parser.add_argument("--only", default="", help="comma-separated mutant ids")
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    parser.add_argument("--check", action="store_true",
                        help="check that every rewrite applies, run nothing")
    parser.add_argument("--report", default="", help="write a JSON report here")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per mutant's tests")
    args = parser.parse_args(argv)

    try:
        mutants = parse(args.mutants)
        if args.only:
            want = args.only.split(",")
            unknown = [w for w in want if w not in {m["id"] for m in mutants}]
            if unknown:
                raise MutantError("no mutant named %s" % ", ".join(unknown))
            mutants = [m for m in mutants if m["id"] in want]
        elif args.quick:
            mutants = [m for m in mutants if m["quick"]]
        for m in mutants:
            check_applies(m, ROOT)
    except MutantError as e:
        print("mutants: error: %s" % e, file=sys.stderr)
        return 2
    if not mutants:
        print("mutants: error: no mutant selected", file=sys.stderr)
        return 2
    if args.list or args.check:
        for m in mutants:
            print("%-34s %-14s %s\n%34s %14s tests: %s" % (
                m["id"], m["layer"], m["why"], "", "", " ".join(m["tests"])))
        layers = sorted({m["layer"] for m in mutants})
        print("%d mutants over %d layers (%s); every rewrite applies once"
              % (len(mutants), len(layers), ", ".join(layers)))
        return 0

    os.makedirs(args.scratch, exist_ok=True)
    logs = os.path.join(args.scratch, "logs")
    os.makedirs(logs, exist_ok=True)
    start = time.time()
    src, copied, removed = sync(args.scratch)
    print("mutants: scratch copy %s (%d files copied, %d removed)" % (src, copied, removed))
    targets = sorted({t for m in mutants for t in m["targets"]})
    if not build(src, targets, os.path.join(logs, "build.log")):
        print("mutants: error: the unmutated scratch copy does not build (%s)"
              % os.path.join(logs, "build.log"), file=sys.stderr)
        return 2
    print("mutants: unmutated scratch build ready (%.0f s)" % (time.time() - start))
    sys.stdout.flush()

    results = []
    for k, m in enumerate(mutants, 1):
        t0 = time.time()
        path = os.path.join(src, m["file"])
        original = check_applies(m, src)
        status, caught_by = "broken", []
        try:
            with open(path, "w") as f:
                f.write(original.replace(m["find"], m["replace"], 1))
            if build(src, m["targets"], os.path.join(logs, m["id"] + ".build.log")):
                passed, failed = run_tests(src, m["tests"], os.path.join(logs, m["id"] + ".log"),
                                           args.timeout)
                status, caught_by = ("survived", []) if passed else ("caught", failed)
            else:
                caught_by = ["did not build: %s" % os.path.join(logs, m["id"] + ".build.log")]
        finally:
            with open(path, "w") as f:
                f.write(original)
        took = time.time() - t0
        results.append({"id": m["id"], "layer": m["layer"], "status": status,
                        "caught_by": caught_by, "tests": m["tests"], "seconds": round(took, 1),
                        "why": m["why"]})
        print("[%d/%d] %-8s %-34s %-17s %5.0f s  %s" % (
            k, len(mutants), status, m["id"], m["layer"], took,
            ("by " + ", ".join(caught_by)) if status == "caught" else
            ("tests " + " ".join(m["tests"]) + " all passed") if status == "survived" else
            "; ".join(caught_by)))
        sys.stdout.flush()
    # Leave the scratch build matching the checkout again.
    build(src, targets, os.path.join(logs, "build.log"))

    caught = sum(r["status"] == "caught" for r in results)
    survived = [r["id"] for r in results if r["status"] == "survived"]
    broken = [r["id"] for r in results if r["status"] == "broken"]
    score = 100.0 * caught / len(results)
    print("mutants: %d of %d caught (score %.1f%%), %d survived%s, %d broken%s, in %.0f s" % (
        caught, len(results), score, len(survived),
        " (%s)" % ", ".join(survived) if survived else "", len(broken),
        " (%s)" % ", ".join(broken) if broken else "", time.time() - start))
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"mutants": results, "caught": caught, "total": len(results),
                       "score": score}, f, indent=1)
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
