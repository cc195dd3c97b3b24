#!/usr/bin/env python3
"""Generates braid's op tables from the ODS, the one source of op identity.

usage: common/gen-op-table.py OPS.json OUT_DIR

OPS.json is `llvm-tblgen --dump-json` of include/braid/Dialect/Braid/BraidOps.td.
Every braid op there declares `opcode` (its stable number in plan files) and
`instrKind`; collectives also `collectiveKind`, `isStartForm` and the def of
their other form (Braid.td). Writes, into OUT_DIR:

  BraidOpTable.h.inc    (no MLIR, no runtime) the Opcode enum, the enums the
                        ops' attributes use, one struct of typed attributes a
                        op (a start form shares its synchronous form's), the
                        OpAttrs variant, and case lists for switches
  BraidOpTable.cpp.inc  the OpInfo table: name, instruction kind, collective
                        kind, the other form, operand/result counts and the
                        attribute descriptors (index = the plan's attribute id)
  BraidOpDecode.inc     the runtime's decoder of a plan instruction's
                        attributes into its typed struct (a switch)
  BraidOpEncode.inc     the compiler's map from an op class to its opcode
  braid_ops.py          the same table for the Python package (checked in as
                        python/braid/op_table.py by utils/update-docs.sh;
                        a test keeps the two equal)

A missing or repeated opcode, an unknown attribute constraint or an
instruction kind outside the list is an error naming the op.
"""

import json
import os
import sys

INSTR_KINDS = ("Kernel", "Collective", "CollectiveStart", "Wait",
               "RecordEvent", "WaitEvent")
# Arguments that the plan keeps in its structure, not as attributes: the
# collective's group.
GROUP_ARGS = ("grid", "grid_axes")
NON_TENSOR_TYPES = ("Braid_FutureType", "Braid_EventType")


def fail(message):
    sys.exit("gen-op-table: " + message)


def write_file(path, text):
    """Writes `text` to `path` unless it holds it already, so that what
    includes an unchanged table is not rebuilt."""
    if os.path.exists(path) and open(path).read() == text:
        return
    open(path, "w").write(text)


def parse_format(op, text):
    """An assemblyFormat as nested tuples, the elements in order:
    ("lit", text), ("var", name), ("type", name), ("attr-dict",),
    ("optional", anchor, elements) for `(...)?` and
    ("alternative", anchor, elements, else_elements) for `(...):(...)?`."""
    pos = 0

    def error(what):
        fail("%s: cannot read its assemblyFormat at %d (%s): %r" % (op, pos, what, text))

    def skip():
        nonlocal pos
        while pos < len(text) and text[pos].isspace():
            pos += 1

    def name():
        nonlocal pos
        if not text.startswith("$", pos):
            error("expected $name")
        end = pos + 1
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        n, pos = text[pos + 1:end], end
        return n

    def elements(stop):
        """Elements up to `stop` (")" or the end); (elements, anchor)."""
        nonlocal pos
        out, anchor = [], None
        while True:
            skip()
            if pos >= len(text) or text.startswith(stop, pos) and stop:
                return tuple(out), anchor
            if text[pos] == "`":
                end = text.index("`", pos + 1)
                out.append(("lit", text[pos + 1:end]))
                pos = end + 1
            elif text[pos] == "$":
                out.append(("var", name()))
            elif text.startswith("attr-dict", pos):
                out.append(("attr-dict",))
                pos += len("attr-dict")
            elif text.startswith("qualified(type(", pos):
                pos += len("qualified(type(")
                out.append(("type", name()))
                pos += 2
            elif text.startswith("type(", pos):
                pos += len("type(")
                out.append(("type", name()))
                pos += 1
            elif text[pos] == "(":
                pos += 1
                inner, inner_anchor = elements(")")
                pos += 1
                if text.startswith(":(", pos):
                    pos += 2
                    other, _ = elements(")")
                    pos += 1
                    if not text.startswith("?", pos):
                        error("expected ? after an alternative")
                    pos += 1
                    out.append(("alternative", inner_anchor, inner, other))
                elif text.startswith("?", pos):
                    pos += 1
                    out.append(("optional", inner_anchor, inner))
                else:
                    error("expected ? or : after a group")
                continue
            else:
                error("unknown directive")
            if text.startswith("^", pos):
                anchor = out[-1][1]
                pos += 1
        return tuple(out), anchor

    result, _ = elements("")
    return result


def camel(name):
    return "".join(w[:1].upper() + w[1:] for w in name.split("_"))


class Table:
    def __init__(self, records):
        self.r = records
        self.enums = {}  # def name -> (class name, [(symbol, value, string)])
        # class name -> the enumerators marked hasBackward (Braid_UnaryCase)
        self.backward = {}
        self.ops = []
        defs = [n for n in records["!instanceof"]["Op"]
                if records[n]["opDialect"]["def"] == "Braid_Dialect"]
        seen = {}
        for name in defs:
            op = self.op(name)
            if op["opcode"] in seen:
                fail("%s and %s have the same opcode %d"
                     % (seen[op["opcode"]], name, op["opcode"]))
            seen[op["opcode"]] = name
            self.ops.append(op)
        self.ops.sort(key=lambda o: o["opcode"])
        self.by_def = {o["def"]: o for o in self.ops}
        for op in self.ops:
            other = op["startForm"] or op["syncForm"]
            if op["instrKind"] in ("Collective", "CollectiveStart"):
                if other not in self.by_def:
                    fail("%s names %r as its other form, which is not an op"
                         % (op["def"], other))
            op["other"] = self.by_def[other] if other else op
        # A start form has the synchronous form's results in the plan (the
        # wait's), and shares its attribute struct.
        for op in self.ops:
            if op["instrKind"] == "CollectiveStart":
                op["numResults"] = op["other"]["numResults"]
                op["resultNames"] = op["other"]["resultNames"]
                op["struct"] = op["other"]["struct"]

    def kind_name(self, value):
        """The name of a Braid_InstrKind or Braid_CollectiveKind def a field
        holds ("" where it is unset)."""
        return self.r[value["def"]]["name"] if value else ""

    def supers(self, name):
        return self.r[name]["!superclasses"]

    def attr(self, op, name, defname):
        """(kind, cpp type, default, required, enum def) of an attribute."""
        rec = self.r[defname]
        sup = self.supers(defname)
        optional = "OptionalAttr" in sup
        default = None
        if "DefaultValuedAttr" in sup:
            default = rec["defaultValue"]
        if optional or "DefaultValuedAttr" in sup:
            base = rec["baseAttr"]["def"]
            rec, sup = self.r[base], self.supers(base)
            defname = base
        enum = None
        if defname == "UnitAttr":
            kind, cpp, default = "Flag", "bool", "false"
            optional = True
        elif "EnumAttrInfo" in sup:
            kind, enum = "Enum", defname
            cls = self.enum(defname)
            cpp = cls
            if default is not None:
                default = cls + "::" + default.split("::")[-1]
        elif defname in ("I64Attr", "SI64Attr", "I32Attr", "SI32Attr"):
            kind, cpp = "Int", "int64_t"
        elif defname == "F64Attr":
            kind, cpp = "Float", "double"
        elif defname in ("DenseI64ArrayAttr",):
            kind, cpp = "Ints", "std::vector<int64_t>"
        elif defname == "StrArrayAttr":
            kind, cpp = "Strings", "std::vector<std::string>"
        elif defname == "ElementsAttr":
            kind, cpp = "Data", "std::vector<uint8_t>"
        else:
            fail("%s: attribute '%s' has a constraint (%s) the plan cannot "
                 "hold; add it to common/gen-op-table.py" % (op, name, defname))
        required = not optional and default is None
        if optional and default is None and kind in ("Int", "Float", "Ints"):
            cpp = "std::optional<%s>" % cpp
        return dict(name=name, kind=kind, cpp=cpp, default=default,
                    required=required, optional=optional and default is None,
                    enum=enum)

    def enum(self, defname):
        if defname not in self.enums:
            rec = self.r[defname]
            cases = []
            backward = []
            for e in rec["enumerants"]:
                c = self.r[e["def"]]
                cases.append((c["symbol"], c["value"], c["str"]))
                if "hasBackward" in c:
                    backward.append(bool(c["hasBackward"]))
            self.enums[defname] = (rec["className"], cases)
            if backward:
                self.backward[rec["className"]] = [
                    sym for (sym, _, _), b in zip(cases, backward) if b]
        return self.enums[defname][0]

    def op(self, name):
        rec = self.r[name]
        mnemonic = rec["opName"]
        code = rec["opcode"]
        if not isinstance(code, int) or code <= 0 or code > 0xFFFF:
            fail("%s (braid.%s) has no opcode: set `let opcode = N;` to an "
                 "unused number in 1..65535" % (name, mnemonic))
        kind = self.kind_name(rec["instrKind"])
        if kind not in INSTR_KINDS:
            fail("%s has instrKind %r, not one of %s"
                 % (name, kind, ", ".join(INSTR_KINDS)))
        operands, attrs, variadic = 0, [], False
        operandNames, resultNames = [], []
        # (name, kind) of each argument as the assembly format prints it.
        syntax = []
        for arg, argname in rec["arguments"]["args"]:
            d = arg["def"]
            sup = self.supers(d)
            if "Attr" in sup or "AttrConstraint" in sup and "TypeConstraint" not in sup:
                if argname in GROUP_ARGS:
                    syntax.append((argname, "Symbol" if argname == "grid" else "Axes"))
                    continue
                attr = self.attr(name, argname, d)
                syntax.append((argname, attr["kind"]))
            else:
                syntax.append((argname, "Operands" if "Variadic" in sup else
                               "OptionalOperand" if "Optional" in sup else "Operand"))
            if "Attr" in sup or "AttrConstraint" in sup and "TypeConstraint" not in sup:
                attrs.append(attr)
            elif d in NON_TENSOR_TYPES:
                continue
            elif "Variadic" in sup:
                variadic = True
                operandNames.append(argname + "...")
            elif "Optional" in sup:
                # The plan holds the operands present: the count varies.
                variadic = True
                operandNames.append(argname + "?")
            else:
                operands += 1
                operandNames.append(argname)
        results, rvariadic = 0, False
        for res, resname in rec["results"]["args"]:
            d = res["def"]
            if d in NON_TENSOR_TYPES:
                continue
            if "Variadic" in self.supers(d):
                rvariadic = True
                resultNames.append(resname + "...")
            else:
                results += 1
                resultNames.append(resname)
        cls = name[len("Braid_"):] if name.startswith("Braid_") else name
        cls = cls[:-2] if cls.endswith("Op") else cls
        return dict(def_=name, **{"def": name}, mnemonic=mnemonic,
                    opcode=code, enumName=cls, cppClass=cls + "Op",
                    instrKind=kind, collectiveKind=self.kind_name(rec["collectiveKind"]),
                    startForm=rec["startForm"], syncForm=rec["syncForm"],
                    numOperands=-1 if variadic else operands,
                    numResults=-1 if rvariadic else results,
                    attrs=attrs, struct=(cls + "Attrs") if attrs else None,
                    inPlace=rec["inPlaceOperands"],
                    isView=any(t["def"] == "Braid_View" for t in rec["traits"]),
                    kernelTables=rec["kernelTables"],
                    operandNames=operandNames, resultNames=resultNames,
                    syntax=tuple(syntax),
                    resultSyntax=tuple((r, "Variadic" in self.supers(res["def"]))
                                       for res, r in rec["results"]["args"]),
                    format=parse_format(name, rec["assemblyFormat"] or ""))


HEADER = "// Generated by common/gen-op-table.py from BraidOps.td. Do not edit.\n"


def write_header(t, out):
    w = [HEADER]
    w.append("// Every op of the braid dialect, by its stable plan number.\n")
    w.append("enum class Opcode : uint16_t {\n")
    for o in t.ops:
        w.append("  %s = %d, // braid.%s\n" % (o["enumName"], o["opcode"], o["mnemonic"]))
    w.append("};\n\n")
    w.append("/// The largest opcode.\ninline constexpr uint16_t kMaxOpcode = %d;\n\n"
             % max(o["opcode"] for o in t.ops))
    for defname, (cls, cases) in sorted(t.enums.items()):
        w.append("enum class %s : uint32_t {\n" % cls)
        for sym, val, _ in cases:
            w.append("  %s = %d,\n" % (sym, val))
        w.append("};\n")
        w.append("inline constexpr uint32_t k%sCount = %d;\n" % (cls, len(cases)))
        w.append("inline const char *stringify%s(%s value) {\n  switch (value) {\n" % (cls, cls))
        for sym, _, s in cases:
            w.append("  case %s::%s:\n    return \"%s\";\n" % (cls, sym, s))
        w.append("  }\n  return \"?\";\n}\n")
        if cls in t.backward:
            # One exhaustive switch, generated: a new kind must say in the
            # ODS whether it has a backward.
            w.append("/// Whether braid.unary_backward computes the derivative of `value`\n"
                     "/// (the ODS's hasBackward).\n")
            w.append("inline bool hasBackward(%s value) {\n  switch (value) {\n" % cls)
            for sym, _, _ in cases:
                w.append("  case %s::%s:\n    return %s;\n"
                         % (cls, sym, "true" if sym in t.backward[cls] else "false"))
            w.append("  }\n  return false;\n}\n")
        w.append("\n")
    w.append("// The typed attributes of each op (a start form shares its\n"
             "// synchronous form's), as the plan holds them.\n")
    structs = []
    for o in t.ops:
        if o["struct"] and o["instrKind"] != "CollectiveStart":
            structs.append(o["struct"])
            w.append("struct %s {\n" % o["struct"])
            for a in o["attrs"]:
                init = " = %s" % a["default"] if a["default"] is not None else (
                    "{}" if not a["optional"] and a["kind"] in ("Int", "Float", "Enum") else "")
                w.append("  %s %s%s;\n" % (a["cpp"], a["name"], init))
            w.append("};\n")
    w.append("\nusing OpAttrs = std::variant<std::monostate, %s>;\n\n" % ", ".join(structs))
    w.append("/// The attribute struct of each opcode (std::monostate for none).\n")
    w.append("template <Opcode> struct AttrsOf { using type = std::monostate; };\n")
    for o in t.ops:
        if o["struct"]:
            w.append("template <> struct AttrsOf<Opcode::%s> { using type = %s; };\n"
                     % (o["enumName"], o["struct"]))

    def cases(pred):
        return " \\\n  ".join("case ::braid::ops::Opcode::%s:" % o["enumName"]
                              for o in t.ops if pred(o))
    w.append("\n// Case lists for switches over Opcode, generated so that a new op of\n"
             "// one of these kinds is handled where every op of the kind is alike.\n")
    w.append("#define BRAID_CASE_KERNEL_OPCODES \\\n  %s\n" % cases(lambda o: o["instrKind"] == "Kernel"))
    w.append("#define BRAID_CASE_COLLECTIVE_OPCODES \\\n  %s\n"
             % cases(lambda o: o["instrKind"] in ("Collective", "CollectiveStart")))
    w.append("#define BRAID_CASE_SCHEDULING_OPCODES \\\n  %s\n"
             % cases(lambda o: o["instrKind"] in ("Wait", "RecordEvent", "WaitEvent")))
    w.append("#define BRAID_CASE_NON_KERNEL_OPCODES \\\n  BRAID_CASE_COLLECTIVE_OPCODES \\\n"
             "  BRAID_CASE_SCHEDULING_OPCODES\n")
    # Each kernel table's ops (the ODS's kernelTables), and every other
    # opcode: the dispatcher routes a table's ops with the first, the
    # table's switch lists each of them and ends with the second.
    for table in sorted({k for o in t.ops for k in o["kernelTables"]}):
        name = table.upper()
        w.append("#define BRAID_CASE_%s_OPCODES \\\n  %s\n"
                 % (name, cases(lambda o: table in o["kernelTables"])))
        w.append("#define BRAID_CASE_NOT_%s_OPCODES \\\n  %s\n"
                 % (name, cases(lambda o: table not in o["kernelTables"])))
    write_file(os.path.join(out, "BraidOpTable.h.inc"), "".join(w))


def write_table(t, out):
    w = [HEADER]
    for o in t.ops:
        if o["attrs"]:
            w.append("static const AttrInfo k%sAttrs[] = {\n" % o["enumName"])
            for a in o["attrs"]:
                enum = ("k%sCount" % t.enums[a["enum"]][0]) if a["enum"] else "0"
                names = ("k%sNames" % t.enums[a["enum"]][0]) if a["enum"] else "nullptr"
                w.append("    {\"%s\", AttrKind::%s, %s, %s, %s},\n"
                         % (a["name"], a["kind"], "true" if a["required"] else "false",
                            enum, names))
            w.append("};\n")
        if o["inPlace"]:
            w.append("static const int8_t k%sInPlace[] = {%s};\n"
                     % (o["enumName"], ", ".join(str(i) for i in o["inPlace"])))
        w.append("static const char *const k%sOperands[] = {%s};\n"
                 % (o["enumName"], ", ".join('"%s"' % n for n in o["operandNames"] + [""])))
        w.append("static const char *const k%sResults[] = {%s};\n"
                 % (o["enumName"], ", ".join('"%s"' % n for n in o["resultNames"] + [""])))
    w.append("\nstatic const OpInfo kOpInfos[] = {\n")
    for o in t.ops:
        ck = ("CollectiveKind::%s" % o["collectiveKind"]) if o["collectiveKind"] else "CollectiveKind::None"
        w.append("    {Opcode::%s, \"%s\", InstrKind::%s, %s, Opcode::%s, %d, %d, "
                 "k%sOperands, k%sResults, %s, %d, %s, %d, %s},\n"
                 % (o["enumName"], o["mnemonic"], o["instrKind"], ck,
                    o["other"]["enumName"], o["numOperands"], o["numResults"],
                    o["enumName"], o["enumName"],
                    ("k%sAttrs" % o["enumName"]) if o["attrs"] else "nullptr",
                    len(o["attrs"]),
                    ("k%sInPlace" % o["enumName"]) if o["inPlace"] else "nullptr",
                    len(o["inPlace"]), "true" if o["isView"] else "false"))
    w.append("};\n")
    out_path = os.path.join(out, "BraidOpTable.cpp.inc")
    enums = []
    for defname, (cls, cases) in sorted(t.enums.items()):
        enums.append("static const char *const k%sNames[] = {%s};\n"
                     % (cls, ", ".join('"%s"' % c[2] for c in cases)))
    write_file(out_path, HEADER + "".join(enums) + "".join(w[1:]))


def write_decode(t, out):
    w = [HEADER, "// The body of decodeOpAttrs(const OpInfo &info, const AttrReader &r).\n"]
    w.append("switch (info.opcode) {\n")
    for o in t.ops:
        w.append("case Opcode::%s: {\n" % o["enumName"])
        if not o["struct"]:
            w.append("  return std::monostate();\n}\n")
            continue
        w.append("  %s a;\n" % o["struct"])
        for i, a in enumerate(o["attrs"]):
            get = {"Flag": "r.flag(%d)", "Int": "r.integer(%d)", "Float": "r.real(%d)",
                   "Ints": "r.ints(%d)", "Strings": "r.strings(%d)", "Data": "r.data(%d)",
                   "Enum": "%s(r.enumeration(%%d))" % a["cpp"]}[a["kind"]] % i
            if a["kind"] == "Flag":
                w.append("  a.%s = %s;\n" % (a["name"], get))
            elif a["required"]:
                w.append("  a.%s = %s;\n" % (a["name"], get))
            else:
                w.append("  if (r.has(%d))\n    a.%s = %s;\n" % (i, a["name"], get))
        w.append("  return a;\n}\n")
    w.append("}\n")
    write_file(os.path.join(out, "BraidOpDecode.inc"), "".join(w))


def write_encode(t, out):
    w = [HEADER, "// The body of getOpcode(mlir::Operation *op).\n"]
    w.append("static const llvm::DenseMap<mlir::TypeID, ::braid::ops::Opcode> opcodes = {\n")
    for o in t.ops:
        w.append("    {mlir::TypeID::get<::braid::%s>(), ::braid::ops::Opcode::%s},\n"
                 % (o["cppClass"], o["enumName"]))
    w.append("};\n")
    write_file(os.path.join(out, "BraidOpEncode.inc"), "".join(w))


def write_python(t, out):
    w = ['"""%s\n\nThe braid ops as the Python package knows them (braid.ir checks every op\nit writes against this table).\n"""\n\nimport collections\nimport enum\n' % HEADER.strip()[3:]]
    # The instruction and collective kinds, one member a def of their
    # TableGen class (Braid_InstrKind, Braid_CollectiveKind in Braid.td).
    for cls, name, doc in (("Braid_InstrKind", "InstrKind",
                            "What a plan instruction of an op is"),
                           ("Braid_CollectiveKind", "CollectiveKind",
                            "A collective's kind in the cost model")):
        w.append("\n\nclass %s(enum.Enum):\n    %r\n" % (name, doc))
        for kind in sorted(t.r[d]["name"] for d in t.r["!instanceof"][cls]):
            w.append("    %s = %r\n" % (kind, kind))
    w.append('\n\nOp = collections.namedtuple("Op", "opcode kind collective operands results '
             'attributes")\nOp.__doc__ = "An op of the table: its opcode, InstrKind, '
             'CollectiveKind (None but for\\na collective), operand and result counts (-1: '
             'variadic) and attribute\\nnames."\n')
    w.append("\n# mnemonic -> Op\nOPS = {\n")
    for o in t.ops:
        collective = o["collectiveKind"]
        w.append("    %r: Op(%d, InstrKind.%s, %s, %d, %d, %r),\n"
                 % (o["mnemonic"], o["opcode"], o["instrKind"],
                    "CollectiveKind." + collective if collective else None,
                    o["numOperands"], o["numResults"], tuple(a["name"] for a in o["attrs"])))
    w.append("}\n")
    # How each op is written: its arguments, results and assembly format
    # (braid.ir writes an op from these).
    doc = ("An op's assembly: its arguments as (name, kind) (an operand's kind\n"
           "Operand, Operands or OptionalOperand; an attribute's its plan kind, Symbol\n"
           "and Axes for the grid and its axes), its results as (name, variadic) and its assemblyFormat as\n"
           "nested tuples: ('lit', text), ('var', name), ('type', name), ('attr-dict',),\n"
           "('optional', anchor, elements), ('alternative', anchor, elements, else).")
    w.append('\n\nSyntax = collections.namedtuple("Syntax", "arguments results format")\n'
             'Syntax.__doc__ = %r\n' % doc)
    w.append("\n# mnemonic -> Syntax\nSYNTAX = {\n")
    for o in t.ops:
        w.append("    %r: Syntax(\n        %r,\n        %r,\n        %r),\n"
                 % (o["mnemonic"], o["syntax"], o["resultSyntax"], o["format"]))
    w.append("}\n")
    # Every enum of the dialect, as a Python enum whose values are the names
    # the IR spells (PipelineScheduleKind("1f1b")).
    for defname in sorted(n for n in t.r["!instanceof"]["EnumAttrInfo"]
                          if t.r[n]["cppNamespace"] == "::braid"):
        rec = t.r[defname]
        w.append("\n\nclass %s(enum.Enum):\n    %r\n" % (rec["className"], rec["summary"]))
        for e in rec["enumerants"]:
            case = t.r[e["def"]]
            w.append("    %s = %r\n" % (case["symbol"], case["str"]))
    write_file(os.path.join(out, "braid_ops.py"), "".join(w))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    records = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    t = Table(records)
    write_header(t, out)
    write_table(t, out)
    write_decode(t, out)
    write_encode(t, out)
    write_python(t, out)


if __name__ == "__main__":
    main()
