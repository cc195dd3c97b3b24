"""The braid ops' result-type inference, from braid's C++ build.

braid.ir asks the ops themselves what they yield: libBraidCAPI.so
(lib/CAPI, include/braid-c/InferTypes.h) runs an op's InferTypeOpInterface,
the same rule its verifier checks, so that no shape rule is written twice.
Loaded through ctypes, so any python3 runs it; the library is found at
$BRAID_CAPI, else in the lib/ beside $BRAID_BIN, in $BRAID_BUILD_DIR/lib, or
in the source tree's build/lib (utils/build.sh's).
"""

import ctypes
import os
import pathlib

_LIBRARY = "libBraidCAPI.so"
_OK, _ERROR, _TOO_SMALL = 0, 1, 2


def _candidates():
    if os.environ.get("BRAID_CAPI"):
        yield pathlib.Path(os.environ["BRAID_CAPI"])
        return
    if os.environ.get("BRAID_BIN"):
        yield pathlib.Path(os.environ["BRAID_BIN"]).parent / "lib" / _LIBRARY
    if os.environ.get("BRAID_BUILD_DIR"):
        yield pathlib.Path(os.environ["BRAID_BUILD_DIR"]) / "lib" / _LIBRARY
    yield pathlib.Path(__file__).resolve().parents[2] / "build" / "lib" / _LIBRARY


_function = None


def _infer_function():
    global _function
    if _function is None:
        tried = list(_candidates())
        path = next((p for p in tried if p.is_file()), None)
        if path is None:
            raise RuntimeError(
                "braid.ir takes result types from braid's build (%s), which is not at %s: "
                "run utils/build.sh, or set BRAID_BIN to the build's bin directory or "
                "BRAID_CAPI to the library" % (_LIBRARY, " or ".join(map(str, tried))))
        function = ctypes.CDLL(str(path)).braidInferResultTypes
        function.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                             ctypes.c_char_p, ctypes.c_size_t,
                             ctypes.POINTER(ctypes.c_size_t)]
        function.restype = ctypes.c_int
        _function = function
    return _function


def infer_result_types(name, operand_types, attributes):
    """The result types (MLIR type text) of op `name` ("braid.matmul") on
    operands of `operand_types` with `attributes` (an attribute dictionary
    in MLIR's generic syntax), as the op's InferTypeOpInterface infers them.
    ValueError with the op's own words where it rejects them."""
    function = _infer_function()
    args = (name.encode(), "\n".join(operand_types).encode(), attributes.encode())
    size = 1024
    while True:
        out = ctypes.create_string_buffer(size)
        needed = ctypes.c_size_t()
        status = function(*args, out, size, ctypes.byref(needed))
        if status != _TOO_SMALL:
            break
        size = needed.value
    text = out.value.decode()
    if status != _OK:
        raise ValueError(text)
    return text.split("\n")
