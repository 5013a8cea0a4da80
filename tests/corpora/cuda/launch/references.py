"""numpy references of the CUDA corpus: reference(inputs) -> {output name: array}, with the
inputs as float64 arrays of their launch-file shapes and the scalars the launch files pass
written below as constants."""
import numpy as np

EPSILON = 1e-5


def _gelu(x):
    return x * 0.5 * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def _d_gelu(x):
    t = np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3))
    dg1 = 0.5 * (1.0 + t)
    dg2 = x * 0.5 * 0.7978845608028654 * (1.0 - t * t)
    dg3 = dg2 * 3 * 0.044715 * x * x
    return dg1 + dg2 + dg3


def gelu(inputs):
    """vals = gelu(input) (tanh form)."""
    return {"vals": _gelu(inputs["input"])}


def bias_gelu(inputs):
    """vals = gelu(input + bias) (bias per column)."""
    return {"vals": _gelu(inputs["input"] + inputs["bias"])}


def d_gelu(inputs):
    """d_output *= gelu'(gelu_input + bias)."""
    return {"d_output": inputs["d_output"] * _d_gelu(inputs["gelu_input"] + inputs["bias"])}


def column_sum(inputs):
    """out = the sum of each column of inp (rows x width)."""
    return {"out": inputs["inp"].sum(axis=0)}


def add2(inputs):
    """out = inp1 + inp2."""
    return {"out": inputs["inp1"] + inputs["inp2"]}


def add3(inputs):
    """out = inp1 + inp2 + inp3."""
    return {"out": inputs["inp1"] + inputs["inp2"] + inputs["inp3"]}


def add4(inputs):
    """out = inp1 + inp2 + inp3 + inp4."""
    return {"out": inputs["inp1"] + inputs["inp2"] + inputs["inp3"] + inputs["inp4"]}


def _layer_norm(x, gamma, beta):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True) + EPSILON
    return (x - mean) / np.sqrt(var) * gamma + beta, var[:, 0], mean[:, 0]


def layer_norm_means(inputs):
    """vals = layer norm of each row of residual (gamma, beta per column); vars, means."""
    out, var, mean = _layer_norm(inputs["residual"], inputs["gamma"], inputs["beta"])
    return {"vals": out, "vars": var, "means": mean}


def layer_norm_vars(inputs):
    """vals = layer norm of each row of residual (gamma, beta per column); vars."""
    out, var, _ = _layer_norm(inputs["residual"], inputs["gamma"], inputs["beta"])
    return {"vals": out, "vars": var}


def ln_backward1(inputs):
    """gamma_grad, betta_grad from vals_hat (not invertible: vals_hat is the normalised x)."""
    g = inputs["out_grad"]
    return {"gamma_grad": (g * inputs["vals_hat"]).sum(axis=0), "betta_grad": g.sum(axis=0)}


def ln_backward1_means(inputs):
    """gamma_grad, betta_grad from X_data, vars, means."""
    g = inputs["out_grad"]
    xhat = (inputs["X_data"] - inputs["means"][:, None]) / np.sqrt(inputs["vars"][:, None])
    return {"gamma_grad": (g * xhat).sum(axis=0), "betta_grad": g.sum(axis=0)}


def ln_backward1_fused_add(inputs):
    """ln_backward1 of out_grad1 + out_grad2."""
    return ln_backward1({**inputs, "out_grad": inputs["out_grad1"] + inputs["out_grad2"]})


def ln_backward1_fused_add_means(inputs):
    """ln_backward1_means of out_grad1 + out_grad2."""
    return ln_backward1_means({**inputs,
                               "out_grad": inputs["out_grad1"] + inputs["out_grad2"]})


def _ln_input_grad(g, xhat, gamma, var):
    gg = g * gamma
    return (gg - gg.mean(axis=1, keepdims=True)
            - xhat * (gg * xhat).mean(axis=1, keepdims=True)) / np.sqrt(var[:, None])


def _ln_backward2_vals_hat(g, vals_hat, gamma, var):
    a = g * gamma
    s1 = (vals_hat * a * np.sqrt(var[:, None])).mean(axis=1, keepdims=True)
    b = a / np.sqrt(var[:, None]) - s1 * vals_hat / var[:, None]
    return b - b.mean(axis=1, keepdims=True)


def ln_backward2(inputs):
    """inp_grad of a layer norm as the kernel forms it from vals_hat (not invertible) and
    vars: a = out_grad * gamma, b = a / sqrt(var) - mean(vals_hat * a * sqrt(var)) *
    vals_hat / var, inp_grad = b - mean(b) per row."""
    return {"inp_grad": _ln_backward2_vals_hat(inputs["out_grad"], inputs["vals_hat"],
                                               inputs["gamma"], inputs["vars"])}


def ln_backward2_means(inputs):
    """inp_grad of a layer norm from X_vals, vars and means."""
    xhat = (inputs["X_vals"] - inputs["means"][:, None]) / np.sqrt(inputs["vars"][:, None])
    return {"inp_grad": _ln_input_grad(inputs["out_grad"], xhat, inputs["gamma"],
                                       inputs["vars"])}


def ln_backward2_fused_add(inputs):
    """ln_backward2 of out_grad1, plus out_grad2."""
    return {"inp_grad": _ln_backward2_vals_hat(inputs["out_grad1"], inputs["vals_hat"],
                                               inputs["gamma"], inputs["vars"])
            + inputs["out_grad2"]}


def ln_backward2_fused_add_means(inputs):
    """ln_backward2_means of out_grad1, plus out_grad2."""
    return {"inp_grad": ln_backward2_means({**inputs, "out_grad": inputs["out_grad1"]})
            ["inp_grad"] + inputs["out_grad2"]}


def attn_softmax(inputs):
    """vals = softmax over the last axis of vals + attn_mask (mask per batch and key)."""
    x = inputs["vals"] + inputs["attn_mask"][:, None, None, :]
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return {"vals": e / e.sum(axis=-1, keepdims=True)}


def softmax_backward(inputs):
    """out_grad = soft_inp * (out_grad - sum(out_grad * soft_inp)) per row."""
    g, y = inputs["out_grad"], inputs["soft_inp"]
    return {"out_grad": y * (g - (g * y).sum(axis=-1, keepdims=True))}


def softmax_backward_v2(inputs):
    """grad = output * (grad - sum(grad * output)) per row."""
    g, y = inputs["grad"], inputs["output"]
    return {"grad": y * (g - (g * y).sum(axis=-1, keepdims=True))}


def transpose_inp(inputs):
    """out = inp transposed."""
    return {"out": inputs["inp"].T.copy()}


def transform_0213(inputs):
    """output[b, h, s, d] = vals[b, s, h, d]."""
    return {"output": inputs["vals"].transpose(0, 2, 1, 3).copy()}


def bias_add_transform_0213(inputs):
    """output[c, b, h, s, d] = vals[b, s, c, h, d] + bias[c, h, d]."""
    v = inputs["vals"] + inputs["bias"][None, None]
    return {"output": v.transpose(2, 0, 3, 1, 4).copy()}


def transform4d_0213(inputs):
    """out[b, s, h, d] = in[b, h, s, d]."""
    return {"out": inputs["in"].transpose(0, 2, 1, 3).copy()}


def bias_add_transform_0213_qkv(inputs):
    """output, k_cache, v_cache [b, h, s, d] = (vals + bias)[b, s, c, h, d] for c = 0, 1, 2."""
    v = (inputs["vals"] + inputs["bias"][None, None]).transpose(2, 0, 3, 1, 4)
    return {"output": v[0].copy(), "k_cache": v[1].copy(), "v_cache": v[2].copy()}


def attn_softmax_v2(inputs):
    """vals = softmax over the last axis of vals + attn_mask (no alibi, no triangle)."""
    return attn_softmax(inputs)


def autocorrelation(inputs):
    """result[lag] = sum over i of data[i] * data[i + lag], lag 0 to 7 (L = 8)."""
    x = inputs["data"]
    n = len(x)
    return {"result": np.array([x[:n - lag] @ x[lag:] for lag in range(8)])}


def block_sums(inputs):
    """d_out[b] = the sum of d_in[512 b : 512 (b + 1)]."""
    x = inputs["d_in"]
    return {"d_out": x.reshape(-1, 512).sum(axis=1)}


def softmax_backward_rows_of_32(inputs):
    """softmax_backward_v2 over rows of 32 of the flat grad and output (S = 32)."""
    g, y = inputs["grad"].reshape(-1, 32), inputs["output"].reshape(-1, 32)
    return {"grad": (y * (g - (g * y).sum(axis=-1, keepdims=True))).reshape(-1)}


def matmul(inputs):
    """C = A @ B (row-major)."""
    return {"C": inputs["A"] @ inputs["B"]}
