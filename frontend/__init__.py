"""Ways into the schedule IR from code users already have.

:mod:`frontend.opencl.translate` turns one ``__kernel`` of an OpenCL C source into a
:class:`~tiletraffic.simulator.ir.nodes.Schedule` (libclang parses it: :mod:`frontend.opencl.clang_ast`;
:mod:`frontend.opencl.rewrite` folds C spellings such as a ``float4`` temporary back into one IR
statement). :mod:`frontend.glsl` reads a GLSL compute shader (tree-sitter, after glslang's
check) by translating it into OpenCL C for that front end. This package imports the
simulator's IR only.
"""
