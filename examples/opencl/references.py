"""numpy references of the OpenCL examples: reference(inputs) -> dict of outputs, with the
inputs as arrays of their launch-file shapes (float64)."""
import numpy as np


def matmul(inputs):
    return {"C": inputs["A"] @ inputs["B"]}


def matvec(inputs):
    return {"y": inputs["A"] @ inputs["x"]}


def transpose(inputs):
    return {"B": inputs["A"].T.copy()}


def partial_sums(inputs, wg=128):
    x = inputs["in"]
    groups = -(-x.size // wg)
    padded = np.zeros(groups * wg)
    padded[:x.size] = x
    return {"partial": padded.reshape(groups, wg).sum(axis=1)}
