"""numpy references of the corpus's OpenCL C kernels: reference(inputs) -> {output argument:
array}, with the inputs as float64 arrays of their launch-file shapes. Scalars a kernel takes
are read from the array shapes, or are the launch file's values where a function says so."""
import numpy as np


def silx_addition(x):
    return {"res": x["a"] + x["b"]}


def _correlate_flipped(image, filt, index_of):
    """sum over taps j of image[index_of(center - c + j)] * filt[L - 1 - j], per axis of filt
    (the trailing image axes, filt's axes in the same order); c = (L - 1) // 2."""
    out = np.zeros_like(image)
    axes = list(range(image.ndim - filt.ndim, image.ndim))
    for taps in np.ndindex(*filt.shape):
        shifted = image
        for axis, j, length in zip(axes, taps, filt.shape):
            n = image.shape[axis]
            idx = index_of(np.arange(n) - (length - 1) // 2 + j, n)
            shifted = np.take(shifted, idx, axis=axis)
        out += shifted * filt[tuple(length - 1 - j for j, length in zip(taps, filt.shape))]
    return out


def _nearest(idx, n):
    return np.clip(idx, 0, n - 1)


def _mirrored(idx, n):
    idx = np.where(idx < 0, -idx - 1, idx)
    return np.where(idx >= n, 2 * n - 1 - idx, idx)


def _silx_convol(x, axes):
    """silx's convol_*: nearest-edge correlation with the flipped filter over ``axes`` of the
    (Z, Y, X) input; the filter's axes are the named ones, outermost first."""
    image, filt = x["input"], x["filter"]
    moved = np.moveaxis(image, axes, range(image.ndim - len(axes), image.ndim))
    out = _correlate_flipped(moved, filt, _nearest)
    return {"output": np.moveaxis(out, range(image.ndim - len(axes), image.ndim), axes)}


def silx_convol_1D_X(x):
    return _silx_convol(x, [2])


def silx_convol_1D_Y(x):
    return _silx_convol(x, [1])


def silx_convol_1D_Z(x):
    return _silx_convol(x, [0])


def silx_convol_2D_XY(x):
    return _silx_convol(x, [1, 2])


def silx_convol_2D_XZ(x):
    return _silx_convol(x, [0, 2])


def silx_convol_2D_YZ(x):
    return _silx_convol(x, [0, 1])


def silx_convol_3D_XYZ(x):
    return _silx_convol(x, [0, 1, 2])


def silx_gradient2D(x):
    s = x["slice"]
    grad = np.zeros(s.shape + (2,))
    grad[:-1, :, 0] = s[1:, :] - s[:-1, :]
    grad[:, :-1, 1] = s[:, 1:] - s[:, :-1]
    return {"slice_grad": grad}


def silx_divergence2D(x):
    g = x["slice_grad"]
    gx, gy = g[..., 0].copy(), g[..., 1].copy()
    gx[1:, :] -= g[:-1, :, 0]
    gy[:, 1:] -= g[:, :-1, 1]
    return {"slice": gx + gy}


def silx_complex_mul_2Dby1D(x):
    a = x["arr2D"][..., 0] + 1j * x["arr2D"][..., 1]
    b = x["arr1D"][..., 0] + 1j * x["arr1D"][..., 1]
    p = a * b[None, :]
    return {"arr2D": np.stack([p.real, p.imag], axis=-1)}


def silx_complex_mul_3Dby1D(x):
    a = x["arr3D"][..., 0] + 1j * x["arr3D"][..., 1]
    b = x["arr1D"][..., 0] + 1j * x["arr1D"][..., 1]
    p = a * b[None, None, :]
    return {"arr3D": np.stack([p.real, p.imag], axis=-1)}


def silx_cpy2d(x):
    """The launch file's offsets: dst (x, y) = (2, 3), src (x, y) = (5, 1)."""
    dst, src = x["dst"].copy(), x["src"]
    th, tw = 7, 13
    dst[3:3 + th, 2:2 + tw] = src[1:1 + th, 5:5 + tw]
    return {"dst": dst}


def sift_horizontal_convolution(x):
    return {"output": _correlate_flipped(x["input"], x["filter"], _mirrored)}


def sift_vertical_convolution(x):
    image = x["input"].T
    return {"output": _correlate_flipped(image, x["filter"], _mirrored).T}


def sift_combine(x):
    """The launch file's a = 1.5, b = -0.75, dog = 1."""
    w = x["w"].copy()
    w[1] = 1.5 * x["u"] - 0.75 * x["v"]
    return {"w": w}


def _gaussian(size, sigma=2.0):
    """The launch file's sigma = 2.0."""
    t = (np.arange(size) - (size - 1) / 2.0) / sigma
    return np.exp(-t * t / 2.0) / sigma / np.sqrt(2.0 * np.pi)


def sift_gaussian(x):
    """The launch file's SIZE = 13."""
    g = _gaussian(13)
    return {"data": g / g.sum()}


def sift_gaussian_nosync(x):
    """The launch file's SIZE = 13."""
    return {"data": _gaussian(13)}


def gputools_scan2d(x):
    v = x["input"]
    return {"output": np.cumsum(v, axis=-1), "sums": v.sum(axis=-1, keepdims=True)}


gputools_scan3d = gputools_scan2d


def _add_block_sums(x):
    out, sums = x["output"].copy(), x["input"]
    width = out.shape[-1]
    block = 8   # the launch file's local size B
    group = np.arange(width) // block
    add = np.where(group > 0, np.take(sums, np.maximum(group - 1, 0), axis=-1), 0.0)
    return {"output": out + add}


gputools_add_sums2d = _add_block_sums
gputools_add_sums3d = _add_block_sums


def _gputools_sep(x, axis):
    """gputools's conv_sep*: zero-padded correlation with the flipped filter along ``axis``
    (stride 1)."""
    image, h = np.moveaxis(x["input"], axis, -1), x["h"]
    n, taps = image.shape[-1], h.shape[0]
    out = np.zeros_like(image)
    for t in range(taps):
        idx = np.arange(n) + taps // 2 - t
        inside = (idx >= 0) & (idx < n)
        out += np.where(inside, np.take(image, np.clip(idx, 0, n - 1), axis=-1), 0.0) * h[t]
    return {"output": np.moveaxis(out, -1, axis)}


def gputools_conv_sep2_x(x):
    return _gputools_sep(x, -1)


def gputools_conv_sep2_y(x):
    return _gputools_sep(x, -2)


gputools_conv_sep3_x = gputools_conv_sep2_x
gputools_conv_sep3_y = gputools_conv_sep2_y


def gputools_conv_sep3_z(x):
    return _gputools_sep(x, -3)


def llama_scale(x):
    """The launch file's scale = 1.5, bias = 0.25."""
    return {"dst": x["src0"] * 1.5 + 0.25}


def llama_mul_mat(x):
    return {"dst": x["src1"] @ x["src0"].T}


def llama_softmax(x):
    """The launch file's scale = 1 and max_bias = 0 (slope 1), src1 the mask and src2 the
    sinks (a buffer of its own, as the host passes it where sinks are given): the row's
    maximum and its sum of exponentials take the sink src2[0] of head 0 in."""
    v = x["src0"] + x["src1"]
    sink = x["src2"].reshape(-1)[0]
    m = np.maximum(v.max(axis=-1, keepdims=True), sink)
    e = np.exp(v - m)
    return {"dst": e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - m))}


def llama_norm(x):
    v = x["src0"]
    c = v - v.mean(axis=-1, keepdims=True)
    return {"dst": c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5)}


def llama_norm_mul_add(x):
    v = x["src0_ptr"]
    c = v - v.mean(axis=-1, keepdims=True)
    n = c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5)
    return {"dst_ptr": n * x["src1_ptr"] + x["src2_ptr"]}


def llama_sum_rows(x):
    return {"dst": x["src0"].sum(axis=-1)}


def gputools_convolve(x):
    """gputools's convolve*_buf: zero-padded convolution over every axis, centred at
    ``L // 2`` (``sum_t h[t] * input[i + L // 2 - t]``, terms outside the input left out)."""
    image, h = x["input"], x["h"]
    out = np.zeros_like(image)
    padded = np.pad(image, [(length, length) for length in h.shape])
    for taps in np.ndindex(*h.shape):
        window = tuple(slice(length + length // 2 - t, length + length // 2 - t + n)
                       for t, length, n in zip(taps, h.shape, image.shape))
        out += padded[window] * h[taps]
    return {"output": out}


CSR_ROW_LENGTHS = (5, 0, 35, 3, 7, 6)
"""Non-zeros per row of the CSR matrix the CSR launch files give (56 in all; a row longer
than a work-group of 32)."""


def csr_row_pointers(sizes):
    """``iptr`` of a CSR matrix of ``sizes["H"]`` rows: row r's non-zeros are entries
    ``iptr[r] .. iptr[r + 1] - 1``, row r holding ``CSR_ROW_LENGTHS[r mod 6]`` of them."""
    lengths = np.resize(np.asarray(CSR_ROW_LENGTHS, dtype=np.int64), sizes["H"])
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


def csr_column_indices(sizes):
    """``ind`` of the same matrix: row r's j-th non-zero in column ``(7 r + 3 j) mod W``,
    W the row width: the kernel's compiled-in ``sizes["IMAGE_WIDTH"]`` where the launch file
    has it, else ``sizes["W"]`` (distinct within a row, for W not a multiple of 3 and rows no
    longer than W), ``sizes["NNZ"]`` entries.

    Raises:
        ValueError: ``NNZ`` is not the number of non-zeros of ``H`` rows, or a row is longer
            than W (one line naming the values)."""
    iptr = csr_row_pointers(sizes).astype(np.int64)
    width = sizes["IMAGE_WIDTH"] if "IMAGE_WIDTH" in sizes else sizes["W"]
    if int(iptr[-1]) != sizes["NNZ"]:
        raise ValueError(f"NNZ = {sizes['NNZ']}, but {sizes['H']} rows hold {int(iptr[-1])} "
                         "non-zeros (56 per 6 rows)")
    if max(CSR_ROW_LENGTHS) > width:
        raise ValueError(f"a row of {max(CSR_ROW_LENGTHS)} non-zeros is longer than "
                         f"the row width {width}")
    lengths = np.diff(iptr)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    within = np.arange(int(iptr[-1])) - np.repeat(iptr[:-1], lengths)
    return ((7 * rows + 3 * within) % width).astype(np.int32)


def silx_densify_csr(x):
    """The dense (H, IMAGE_WIDTH) matrix of the CSR matrix (data, ind, iptr) of the launch
    file (H = 6, IMAGE_WIDTH = 40)."""
    sizes = {"H": 6, "IMAGE_WIDTH": 40, "NNZ": 56}
    iptr, ind = csr_row_pointers(sizes), csr_column_indices(sizes)
    out = np.zeros((sizes["H"], sizes["IMAGE_WIDTH"]))
    for r in range(sizes["H"]):
        for k in range(iptr[r], iptr[r + 1]):
            out[r, ind[k]] = x["data"][k]
    return {"output": out}


def _pyfai_csr(x, threshold):
    """pyFAI's CSR integration of ``weights`` by the launch files' CSR matrix (B = 8 rows of
    P = 64 pixels, ``coefs`` its values; no dummy): per row, the sum of coef * weight over
    its finite pixels (``sum_data``), the sum of their coefs (``sum_count``) and their
    ratio where the count exceeds ``threshold``, else the dummy value 0 (``merged``)."""
    sizes = {"H": 8, "W": 64, "NNZ": 61}
    iptr, ind = csr_row_pointers(sizes), csr_column_indices(sizes)
    weights = x["weights"].astype(np.float64)
    coefs = x["coefs"].astype(np.float64)
    data, count = np.zeros(sizes["H"]), np.zeros(sizes["H"])
    for r in range(sizes["H"]):
        for k in range(iptr[r], iptr[r + 1]):
            if np.isfinite(weights[ind[k]]):
                data[r] += coefs[k] * weights[ind[k]]
                count[r] += coefs[k]
    merged = np.where(count > threshold, data / np.where(count == 0, 1, count), 0.0)
    return {"sum_data": data, "sum_count": count, "merged": merged}


def pyfai_csr_integrate(x):
    """``csr_integrate`` (a row per work-group): the merged value where the count is > 0."""
    return _pyfai_csr(x, 0.0)


def pyfai_csr_integrate_single(x):
    """``csr_integrate_single`` (a row per work-item): the merged value where the count is
    > 1e-10 (the kernel's epsilon)."""
    return _pyfai_csr(x, 1e-10)


def pyfai_csr_integrate4_single(x):
    """``csr_integrate4_single`` with the Poisson error model (``error_model = 0``): per row
    of the CSR matrix, over its pixels whose signal, variance and norm are finite and whose
    count is > 0, the double-word sums (high part; the low part of an exact sum is 0) of
    coef * signal, coef^2 * variance, coef * norm, then the sums of coef * count and of
    (coef * norm)^2 (``summed``, 8 floats a row); where the count sum is > 0 the average
    signal, the standard deviation and the standard error of the mean, else the ``empty``
    value 0."""
    sizes = {"H": 8, "W": 64, "NNZ": 61}
    iptr, ind = csr_row_pointers(sizes), csr_column_indices(sizes)
    w = x["weights"].astype(np.float64).reshape(-1, 4)
    coefs = x["coefs"].astype(np.float64)
    summed = np.zeros((sizes["H"], 8))
    for r in range(sizes["H"]):
        for k in range(iptr[r], iptr[r + 1]):
            signal, variance, norm, count = w[ind[k]]
            c = coefs[k]
            if np.all(np.isfinite([signal, variance, norm])) and count > 0:
                summed[r, 0] += c * signal
                summed[r, 2] += c * c * variance
                summed[r, 4] += c * norm
                summed[r, 6] += c * count
                summed[r, 7] += (c * norm) ** 2
    valid = summed[:, 6] > 0
    safe = np.where(valid, 1.0, 0.0)
    norm1 = np.where(valid, summed[:, 4], 1.0)
    norm2 = np.where(valid, summed[:, 7], 1.0)
    return {"summed": summed,
            "averint": safe * summed[:, 0] / norm1,
            "stdevpix": safe * np.sqrt(summed[:, 2] / norm2),
            "stderrmean": safe * np.sqrt(summed[:, 2]) / norm1}


def pyfai_csr_integrate4(x):
    """``csr_integrate4`` (a row per work-group, its partial sums merged through local
    memory): the same sums and results as :func:`pyfai_csr_integrate4_single`."""
    return pyfai_csr_integrate4_single(x)
