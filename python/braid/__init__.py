"""braid: ahead-of-time overlap of communication and computation for
distributed training steps. This package holds the Python side: IR
generation for model shapes (models), and later the PyTorch exporter."""
