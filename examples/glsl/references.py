"""numpy references of the GLSL examples: reference(inputs) -> dict of outputs, with the
inputs as arrays of their launch-file shapes (float64)."""


def matmul(inputs):
    return {"C": inputs["A"] @ inputs["B"]}


def matvec(inputs):
    return {"output": inputs["matrix"] @ inputs["vector"]}
