"""GLSL compute shaders (Vulkan) into the schedule IR: :mod:`.syntax` parses the shader
with tree-sitter after the reference compiler's check, :mod:`.translate` turns its tree
into OpenCL C with the GLSL file's places, read by the OpenCL C front end, and
:mod:`.launch` reads a GLSL launch file (the dispatch, bindings, push constants and
specialization constants)."""
