//===- ToolSupport.h - what braid's MLIR tools share ------------*- C++ -*-===//
//
// braid-opt, braid-compile and braid-translate parse text with MLIR's parser.
// One input is known to crash MLIR 22's parser itself (a dense array of
// `index` elements, `array<index: ...>`: Parser::parseDenseArrayAttr asks an
// index type for its float width); the tools refuse it before parsing,
// naming the place. Any other crash prints, before LLVM's stack dump, what
// the tool was reading and where to look, instead of a bare segfault.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TOOLS_TOOLSUPPORT_H
#define BRAID_TOOLS_TOOLSUPPORT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace braid::tools {

/// False, after an error naming `name:line:col`, if `text` holds an input
/// that crashes MLIR 22's parser. A match inside a `//` comment is skipped.
inline bool rejectKnownParserCrashes(llvm::StringRef name,
                                     llvm::StringRef text) {
  llvm::Regex denseIndexArray(
      "array[[:space:]]*<[[:space:]]*index([^_a-zA-Z0-9]|$)");
  unsigned lineNumber = 0;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++lineNumber;
    llvm::StringRef code = line.substr(0, line.find("//"));
    llvm::SmallVector<llvm::StringRef, 2> match;
    if (!denseIndexArray.match(code, &match))
      continue;
    size_t column = match[0].data() - line.data() + 1;
    llvm::errs() << name << ":" << lineNumber << ":" << column
                 << ": error: dense arrays of index elements (array<index: "
                    "...>) crash MLIR 22's parser (an upstream bug, "
                    "docs/Dialect.md); write array<i64: ...>\n";
    return false;
  }
  return true;
}

/// rejectKnownParserCrashes on a file (standard input, "-", is not read
/// ahead: the parser reads it, and the crash handler names it).
inline bool checkInputFile(llvm::StringRef filename) {
  if (filename == "-" || filename.empty())
    return true;
  auto buffer = llvm::MemoryBuffer::getFile(filename, /*IsText=*/true);
  if (!buffer)
    return true; // The tool itself reports a missing file.
  return rejectKnownParserCrashes(filename, (*buffer)->getBuffer());
}

/// On a crash signal, before LLVM's stack dump: what the tool was reading.
inline void installCrashNote(const char *tool, std::string input) {
  static std::string note;
  note = std::string(tool) + ": crashed while working on " +
         (input.empty() || input == "-" ? std::string("standard input")
                                        : "'" + input + "'") +
         ". This is a bug in braid or in MLIR; please report it with that "
         "input. (MLIR 22's parser is known to crash on array<index: ...>, "
         "see docs/Dialect.md.)\n";
  llvm::sys::AddSignalHandler(
      [](void *) {
        llvm::errs() << note;
        llvm::errs().flush();
      },
      nullptr);
}

} // namespace braid::tools

#endif // BRAID_TOOLS_TOOLSUPPORT_H
