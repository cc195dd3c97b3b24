# braid's unit tests: googletest executables, one lit test per test case.

import lit.formats

config.name = "braid-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = config.braid_unit_obj_root
config.test_exec_root = config.braid_unit_obj_root
