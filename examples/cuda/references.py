"""numpy references of the CUDA examples: reference(inputs) -> dict of outputs, with the
inputs as arrays of their launch-file shapes (float64)."""


def matmul(inputs):
    return {"C": inputs["A"] @ inputs["B"]}


def matvec(inputs):
    return {"y": inputs["A"] @ inputs["x"]}


def transpose(inputs):
    return {"B": inputs["A"].T.copy()}
