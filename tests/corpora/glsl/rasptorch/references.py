"""numpy references of the corpus's shaders: reference(inputs) -> {output binding: array},
with the inputs as float64 arrays of their launch-file shapes."""
import numpy as np


def matmul(x):
    return {"bufo": x["bufa"] @ x["bufb"]}


def matmul_wide(x):
    return {"buf_o": x["buf_a"] @ x["buf_b"]}


def matmul_a_bt(x):
    return {"bufo": x["bufa"] @ x["bufb"].T}


def matmul_at_b(x):
    return {"bufo": x["bufa"].T @ x["bufb"]}


def sum_rows(x):
    return {"bufo": x["bufa"].sum(axis=0)}


def sum_stage(x):
    v = x["bufin"]
    blocks = -(-v.size // 512)
    return {"bufout": np.array([v[512 * b:512 * (b + 1)].sum() for b in range(blocks)])}


def transpose(x):
    return {"bufout": x["bufin"].T}


def _softmax(v):
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _log_softmax(v):
    m = v.max(axis=1, keepdims=True)
    return v - (np.log(np.exp(v - m).sum(axis=1, keepdims=True)) + m)


def softmax(x):
    return {"bufo": _softmax(x["bufi"])}


def log_softmax(x):
    return {"bufo": _log_softmax(x["bufi"])}


def softmax_backward(x):
    y, g = x["bufy"], x["bufg"]
    return {"bufo": y * (g - (g * y).sum(axis=1, keepdims=True))}


def log_softmax_backward(x):
    logp, g = x["bufy"], x["bufg"]
    return {"bufo": g - np.exp(logp) * g.sum(axis=1, keepdims=True)}


def _normalized(v):
    mean = v.mean(axis=1, keepdims=True)
    return (v - mean) / np.sqrt(((v - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)


def layernorm(x):
    return {"bufo": _normalized(x["bufi"])}


def layernorm_backward(x):
    v, g = x["bufx"], x["bufgo"]
    c = v.shape[1]
    mean = v.mean(axis=1, keepdims=True)
    invstd = 1 / np.sqrt(((v - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    xhat = (v - mean) * invstd
    return {"bufgx": invstd / c * (c * g - g.sum(axis=1, keepdims=True)
                                   - xhat * (g * xhat).sum(axis=1, keepdims=True))}


def xent_loss(x):
    return {"bufo": -(x["buft"] * _log_softmax(x["bufl"])).sum(axis=1)}


def add_rowvec(x):
    return {"bufo": x["bufa"] + x["bufb"][None, :]}


def mul_rowvec(x):
    return {"bufo": x["bufa"] * x["bufb"][None, :]}
