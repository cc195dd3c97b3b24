# The runtime's tables are switches over the generated Opcode (or over
# CollectiveKind) with no default, compiled with -Werror=switch: an op the
# ODS declares but a table forgets does not compile. This test removes one
# case from each table, recompiles that file alone (its command from the
# build's compile_commands.json, -fsyntax-only, the original's directory on
# the include path) and expects the compiler to name the missing case; the
# unchanged file must compile. The cuda tables (CudaKernels.cu) are built
# with the same flag; nvcc is too slow to recompile here.
#
# RUN: %python %s %braid_obj %braid_src

import json
import os
import shlex
import subprocess
import sys
import tempfile

# (file, the case line to remove, the enumerator the compiler must name[,
# for a header, a file that includes it: compiled from a copy beside the
# header's copy, so that its quoted include finds the changed header])
CASES = [
    ("runtime/lib/OpChecks.cpp", "  case Opcode::LayerNormBackward:", "LayerNormBackward"),
    ("runtime/lib/CollectiveChecks.cpp", "  case CollectiveKind::Broadcast:", "Broadcast"),
    ("runtime/lib/cpu/CpuKernels.cpp", "  case Opcode::Attention:", "Attention"),
    ("runtime/lib/cpu/CpuKernels.cpp", "  case Opcode::AdamW:", "AdamW"),
    ("runtime/lib/Collectives.cpp", "  case CollectiveKind::Permute: {", "Permute"),
    ("runtime/lib/cpu/MpiCommunicator.cpp", "  case ops::ReductionKind::Max:", "Max"),
    ("runtime/lib/PlanDump.cpp", "      case InstrKind::Wait:", "Wait"),
    # Issue 48: the switches below the opcode's. A second-level kernel
    # table lists its ops (the ODS's kernelTables) and the generated rest;
    # the simulator's point-to-point switches list every collective kind;
    # the unary kinds' functions and derivatives list every kind.
    ("runtime/lib/cpu/CpuNorm.cpp", "  case Opcode::LayerNormBackward:", "LayerNormBackward"),
    ("runtime/lib/cpu/CpuLosses.cpp", "  case Opcode::CrossEntropyShardLoss:", "CrossEntropyShardLoss"),
    ("runtime/lib/sim/SimBackend.cpp", "  case CollectiveKind::SendRecv:", "SendRecv"),
    ("runtime/lib/sim/SimPlayer.cpp", "  case CollectiveKind::Recv:", "Recv"),
    ("runtime/lib/cpu/CpuMath.h", "  case ops::UnaryKind::Rsqrt:", "Rsqrt",
     "runtime/lib/cpu/CpuKernels.cpp"),
]


def main():
    obj, src = sys.argv[1], sys.argv[2]
    with open(os.path.join(obj, "compile_commands.json")) as f:
        commands = {os.path.realpath(e["file"]): e for e in json.load(f)}
    failures = 0
    tmp = tempfile.mkdtemp()

    def compile_text(entry, path, text, header=None):
        """Compiles `text` as `path` (or, with `header`, `path` itself
        beside `text` written as that header)."""
        if header:
            with open(os.path.join(tmp, os.path.basename(header)), "w") as f:
                f.write(text)
            with open(path) as f:
                text = f.read()
        out = os.path.join(tmp, os.path.basename(path))
        with open(out, "w") as f:
            f.write(text)
        args = shlex.split(entry["command"])
        # The same flags, on the copy, checking syntax and types only.
        i = args.index(entry["file"]) if entry["file"] in args else args.index(path)
        args[i] = out
        if "-o" in args:
            j = args.index("-o")
            del args[j:j + 2]
        args = [a for a in args if a not in ("-MD",)]
        for flag in ("-MT", "-MF"):
            while flag in args:
                j = args.index(flag)
                del args[j:j + 2]
        args += ["-fsyntax-only", "-I" + os.path.dirname(path)]
        return subprocess.run(args, cwd=entry["directory"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)

    checked = set()
    for rel, line, name, *includer in CASES:
        path = os.path.realpath(os.path.join(src, rel))
        unit = os.path.realpath(os.path.join(src, includer[0])) if includer else path
        entry = commands.get(unit)
        if entry is None:
            print("FAIL %s is not in compile_commands.json" % os.path.relpath(unit, src))
            failures += 1
            continue
        with open(path) as f:
            text = f.read()
        if "-Werror=switch" not in entry["command"]:
            print("FAIL %s is not compiled with -Werror=switch" % rel)
            failures += 1
        if rel not in checked:
            checked.add(rel)
            p = (compile_text(entry, unit, text, header=path) if includer
                 else compile_text(entry, path, text))
            ok = p.returncode == 0
            print("%s %s compiles as it is" % ("ok  " if ok else "FAIL", rel))
            if not ok:
                print(p.stdout[-2000:])
            failures += not ok
        lines = text.split("\n")
        if lines.count(line) < 1:
            print("FAIL %s has no line %r" % (rel, line))
            failures += 1
            continue
        k = lines.index(line)
        mutated = "\n".join(lines[:k] + lines[k + 1:])
        p = (compile_text(entry, unit, mutated, header=path) if includer
             else compile_text(entry, path, mutated))
        ok = (p.returncode != 0 and "not handled in switch" in p.stdout and name in p.stdout)
        print("%s %s without %r does not compile (%s)" % (
            "ok  " if ok else "FAIL", rel, line.strip(),
            "names %s" % name if ok else p.stdout[-500:]))
        failures += not ok
    print("switch-coverage: %d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
