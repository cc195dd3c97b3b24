"""braid: ahead-of-time overlap of communication and computation for
distributed training steps. This package holds the Python side: the PyTorch
exporter (`braid.export(...)`, `python3 -m braid.export`), IR generation for
model shapes without weights (`braid.models`), and timeline plots
(`braid.timeline`)."""


def __getattr__(name):
    # braid.export needs torch; import it only when asked for.
    if name == "export":
        import importlib
        return importlib.import_module("braid.export")
    if name == "ExportError":  # what braid.export raises: `except braid.ExportError`
        from braid.aten import ExportError
        return ExportError
    raise AttributeError("module 'braid' has no attribute %r" % name)
