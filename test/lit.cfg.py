# The braid regression tests: braid-opt on small inputs, checked by FileCheck
# and --verify-diagnostics. They need nothing but the build.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "braid"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.braid_obj_root, "test")

config.substitutions.append(("%examples", os.path.join(config.braid_src_root, "examples")))
config.substitutions.append(("%braid_src", config.braid_src_root))
config.substitutions.append(("%braid_obj", config.braid_obj_root))
# lit itself runs under Debian's python3; the few script-driven checks here
# use only the standard library, under the same interpreter unless
# BRAID_PYTHON names another (as in integration_test/lit.cfg.py).
config.substitutions.append(("%python", os.environ.get("BRAID_PYTHON", "/usr/bin/python3")))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# build/compiler-only runs this suite with the tools built under ASan and
# UBSan (utils/build-compiler-only.sh). Three ASan settings make that work,
# and leave any other build unaffected:
#   allow_user_poisoning=0  LLVM's allocators poison and unpoison their slabs
#       from inline header code; libMLIR.so, not instrumented, does not, so
#       the poisoning seen by braid's code alone is wrong (use-after-poison
#       in a memmove of MLIR's);
#   detect_leaks=0  braid-compile and MLIR's tools end without freeing the
#       IR on purpose (clang's -disable-free);
#   handle_segv=0  a crash is reported by the tools' own handler, which
#       malformed-input.test checks.
config.environment["ASAN_OPTIONS"] = "allow_user_poisoning=0:detect_leaks=0:handle_segv=0"
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1"
llvm_config.add_tool_substitutions(["braid-opt", "braid-translate", "braid-compile"],
                                   [config.braid_tools_dir])
