"""Inline SVG of the explain page's pictures, drawn from the document of :mod:`.collect`.

Each function takes parts of that document and returns SVG markup (a string, escaped). No
number is computed here beyond positions and colours: every count shown is read from the
document.
"""
from __future__ import annotations

from markupsafe import escape

from tiletraffic.simulator.model.prediction import term_name

LOAD, STORE, OUTPUT, HAZARD, BOTH = "#2b6cb0", "#dd6b20", "#2f855a", "#e53e3e", "#805ad5"
GRID, CELL = "#cbd5e0", "#f7fafc"
GAP = 28
LABEL = 18
LABEL_CHAR_PX = 7.5
"""Width allowed per character of a ``label`` text (12 px, bold): pictures are made wide
enough for their captions with it."""


def _e(text) -> str:
    return str(escape(str(text)))


def element_name(array: dict, flat: int) -> str:
    """``A[r][c]`` (or ``x[i]``) of flat element ``flat`` of an array of the document."""
    shape = array["shape"]
    idx, rest = [], flat
    for size in reversed(shape):
        idx.append(rest % size)
        rest //= size
    idx.reverse()
    if rest:
        return f"{array['name']}[{flat}] (flat index, outside the array)"
    return array["name"] + "".join(f"[{i}]" for i in idx)


def work_item_name(local_size, lid: int) -> str:
    """``(lx, ly)`` of flattened local id ``lid`` (dimension 0 fastest)."""
    ids = []
    for size in local_size:
        ids.append(lid % size)
        lid //= size
    return "(" + ", ".join(map(str, ids)) + ")"


def layout(arrays: list[dict], family: str, width_px: int = 460) -> tuple[dict, int, int, int]:
    """Positions of the arrays of one picture: ``({name: (x, y, rows, cols, column)},
    cell pixels, width, height)``; ``column``: a 1-D array drawn standing. GEMM: A left, B
    above, C below B (the textbook picture); matrix-vector: x above A, y right of A; else
    the global arrays in a row. Local arrays go in a row below."""
    glob = {a["name"]: a for a in arrays if a["space"] == "global"}
    local = [a for a in arrays if a["space"] == "local"]
    spots: dict[str, tuple] = {}
    if {"A", "B", "C"} <= set(glob) and glob["A"]["rows"] == glob["C"]["rows"] and \
            glob["B"]["cols"] == glob["C"]["cols"] and glob["A"]["cols"] == glob["B"]["rows"]:
        M, K, N = glob["A"]["rows"], glob["A"]["cols"], glob["C"]["cols"]
        wide, high = K + N, K + M
        cell = max(4, min(16, (width_px - GAP) // max(wide, high)))
        spots["B"] = (K * cell + GAP, LABEL, K, N, False)
        spots["A"] = (0, K * cell + GAP + LABEL, M, K, False)
        spots["C"] = (K * cell + GAP, K * cell + GAP + LABEL, M, N, False)
        others = [a for n, a in glob.items() if n not in "ABC"]
    elif {"A", "x", "y"} <= set(glob) and len(glob["y"]["shape"]) == 1:
        M, K = glob["A"]["rows"], glob["A"]["cols"]
        cell = max(4, min(16, (width_px - GAP) // max(K + 1, M + 1)))
        spots["x"] = (0, LABEL, 1, K, False)
        spots["A"] = (0, cell + GAP + LABEL, M, K, False)
        spots["y"] = (K * cell + GAP, cell + GAP + LABEL, 1, M, True)  # drawn standing
        others = [a for n, a in glob.items() if n not in ("A", "x", "y")]
    else:
        others = list(glob.values())
        cell = None
    if others:
        widest = sum(a["cols"] for a in others) or 1
        cell = cell or max(4, min(16, (width_px - GAP * len(others)) // widest))
        x = 0
        y0 = max((s[1] + s[2] * cell for s in spots.values()), default=0) + \
            (GAP if spots else 0) + LABEL
        for a in others:
            spots[a["name"]] = (x, y0, a["rows"], a["cols"], False)
            x += a["cols"] * cell + GAP
    if local:
        x = 0
        y0 = max(s[1] + s[2] * cell for s in spots.values()) + GAP + 2 * LABEL
        for a in local:
            spots[a["name"]] = (x, y0, a["rows"], a["cols"], False)
            x += max(a["cols"] * cell, 7 * len(_caption(a))) + GAP
    width = max(s[0] + (s[2] if s[4] else s[3]) * cell for s in spots.values()) + 8
    height = max(s[1] + (s[3] if s[4] else s[2]) * cell for s in spots.values()) + 8
    return spots, cell, width, height


def _cell_xy(spot, cell: int, flat: int) -> tuple[float, float]:
    x0, y0, rows, cols, column = spot
    r, c = divmod(flat, cols)
    if column:   # drawn standing: element i of a one-row array at row i
        return x0 + r * cell, y0 + c * cell
    return x0 + c * cell, y0 + r * cell


def _grid(name: str, spot, cell: int, caption: str) -> str:
    x0, y0, rows, cols, column = spot
    w, h = (rows, cols) if column else (cols, rows)
    out = [f'<g class="grid" data-array="{_e(name)}" data-x0="{x0}" data-y0="{y0}" '
           f'data-cols="{cols}" data-cell="{cell}" data-column="{int(column)}"></g>',
           f'<text x="{x0}" y="{y0 - 5}" class="label">{_e(caption)}</text>',
           f'<rect x="{x0}" y="{y0}" width="{w * cell}" height="{h * cell}" fill="{CELL}" '
           f'stroke="{GRID}"/>']
    if cell >= 6:
        lines = [f'M{x0 + i * cell} {y0}v{h * cell}' for i in range(1, w)]
        lines += [f'M{x0} {y0 + j * cell}h{w * cell}' for j in range(1, h)]
        if lines:
            out.append(f'<path d="{" ".join(lines)}" stroke="{GRID}" stroke-width="0.5"/>')
    return "".join(out)


def _caption(a: dict) -> str:
    where = "local" if a["space"] == "local" else {
        "in": "input", "out": "output", "inout": "input and output"}[a["role"]]
    return f"{a['name']} ({' x '.join(map(str, a['shape']))}, {where})"


def tiles_picture(doc: dict) -> str:
    """Tiles over time: every array as a grid, one ``<g class="step">`` per step holding
    the elements the chosen work-group loads (blue) and stores (orange) in it, with the
    work-items on hover; the work-group's output elements outlined green; hazard examples
    of this work-group marked red."""
    arrays = {a["name"]: a for a in doc["arrays"]}
    spots, cell, width, height = layout(doc["arrays"], doc["schedule"]["family"])
    local_size = doc["work_group"]["local_size"]
    parts = [_grid(n, spots[n], cell, _caption(arrays[n])) for n in spots]
    produced: set[tuple[str, int]] = set()
    groups = []
    for i, step in enumerate(doc["steps"]["list"]):
        touched: dict[tuple[str, int], list[str]] = {}
        for acc in step["accesses"]:
            a = arrays[acc["array"]]
            verb = "read" if acc["direction"] == "load" else "written"
            for flat, count, items in zip(acc["elements"], acc["counts"], acc["work_items"]):
                if flat >= a["rows"] * a["cols"] or flat < 0:
                    continue
                if acc["direction"] == "store" and a["space"] == "global":
                    produced.add((a["name"], flat))
                who = ", ".join(work_item_name(local_size, w) for w in items)
                more = ", ..." if len(items) < count and len(items) >= 8 else ""
                touched.setdefault((a["name"], flat), []).append(
                    (acc["direction"], f"{verb} {count} time(s) in this step by work-item(s) "
                                       f"{who}{more}"))
        cells = []
        for (name, flat), what in touched.items():
            dirs = {d for d, _ in what}
            kind = "both" if len(dirs) > 1 else dirs.pop()
            colour = {"load": LOAD, "store": STORE, "both": BOTH}[kind]
            x, y = _cell_xy(spots[name], cell, flat)
            text = "; ".join(t for _, t in what) + (
                " (read and written in one barrier interval: a race unless the same "
                "work-item does both)" if kind == "both" else "")
            cells.append(
                f'<rect class="acc {kind}" x="{x}" y="{y}" width="{cell}" height="{cell}" '
                f'fill="{colour}" fill-opacity="0.8"><title>'
                f'{_e(element_name(arrays[name], flat))}: {_e(text)}</title></rect>')
        shown = ' class="step current"' if i == 0 else ' class="step" style="display:none"'
        groups.append(f'<g{shown} data-step="{i}">{"".join(cells)}</g>')
    outline = []
    for name, flat in sorted(produced):
        x, y = _cell_xy(spots[name], cell, flat)
        outline.append(f'<rect x="{x + 0.75}" y="{y + 0.75}" width="{cell - 1.5}" '
                       f'height="{cell - 1.5}" fill="none" stroke="{OUTPUT}" '
                       f'stroke-width="1.5"/>')
    marks = []
    for j, h in enumerate(doc["hazards"]):
        a = arrays.get(h["array"])
        if a is None or h["index"] < 0 or \
                list(h["group_id"]) != doc["work_group"]["id"][:len(h["group_id"])]:
            continue
        flat = h["index"]
        spot = spots[a["name"]]
        if h["kind"] == "out-of-bounds" and flat < a["rows"] * a["cols"]:
            continue   # an index past one dimension only: its flat index names no cell
        if flat >= a["rows"] * a["cols"]:  # past the end: drawn just below the array
            x, y = spot[0] + (flat % a["cols"]) * cell, spot[1] + a["rows"] * cell + 2
        else:
            x, y = _cell_xy(spot, cell, flat)
        marks.append(f'<rect class="hazard-mark" data-hazard="{j}" x="{x - 1.5}" y="{y - 1.5}" '
                     f'width="{cell + 3}" height="{cell + 3}" fill="none" stroke="{HAZARD}" '
                     f'stroke-width="3"><title>{_e(h["kind"])}: {_e(element_name(a, flat))}'
                     f' in barrier interval {h["epoch"]}</title></rect>')
    return (f'<svg id="tiles-svg" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img">'
            + "".join(parts) + "".join(groups) + "".join(outline) + "".join(marks)
            + '<g id="work-item-overlay"></g></svg>')


def _heat(count: int, top: int) -> str:
    """White to dark blue by ``count / top``."""
    f = 0 if top <= 0 else count / top
    r, g, b = (int(247 + (v - 247) * f) for v in (44, 82, 130))
    return f"rgb({r},{g},{b})"


def reuse_picture(doc: dict, name: str) -> str:
    """Heat map of how many times each element of input ``name`` is read from global memory
    over the whole launch (exact count on hover)."""
    a = next(x for x in doc["arrays"] if x["name"] == name)
    reads = doc["reuse"][name]["reads"]
    rows, cols = a["rows"], a["cols"]
    cell = max(3, min(10, 256 // max(rows, cols)))
    top = doc["reuse"][name]["max"]
    out = []
    for flat, count in enumerate(reads):
        r, c = divmod(flat, cols)
        out.append(f'<rect x="{c * cell}" y="{r * cell}" width="{cell}" height="{cell}" '
                   f'fill="{_heat(count, top)}"><title>{_e(element_name(a, flat))}: read '
                   f'{count} time(s)</title></rect>')
    w, h = cols * cell, rows * cell
    return (f'<svg class="heat" data-array="{_e(name)}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{w + 2}" height="{h + 2}" viewBox="-1 -1 {w + 2} {h + 2}">'
            + "".join(out) + f'<rect x="0" y="0" width="{w}" height="{h}" fill="none" '
            f'stroke="{GRID}"/></svg>')


def coalescing_picture(sample: dict, sector_bytes: int, line_bytes: int) -> str:
    """One sub-group's global request, a load or a store (``sample["direction"]``): lanes
    (top) -> byte addresses -> the 32-byte sectors they fall in, inside their 128-byte lines
    (bottom); lines that are touched are drawn with all their sectors, the touched ones
    filled, in the load or the store colour."""
    lanes, elements = sample["lanes"], sample["elements"]
    colour = STORE if sample["direction"] == "store" else LOAD
    lane_w = 14
    per_line = line_bytes // sector_bytes
    size = sample.get("element_bytes", 4)      # 2 for half storage
    addresses = {lane: [e * size for e in els] for lane, els in zip(lanes, elements)}
    touched_lines = sorted({b // line_bytes for bs in addresses.values() for b in bs})
    touched_sectors = {b // sector_bytes for bs in addresses.values() for b in bs}
    slots = max(1, len(touched_lines) * per_line)
    room = max(len(lanes) * lane_w, 448) - 8 * len(touched_lines)
    sec_w = max(8, min(48, room // slots))
    line_w = per_line * sec_w + 8
    width = max(len(lanes) * lane_w, len(touched_lines) * line_w) + 20
    top, bottom = 30, 150
    out = [f'<text x="0" y="12" class="label">lanes (work-items) of sub-group '
           f'{sample["sub_group"]}</text>',
           f'<text x="0" y="{bottom - 8}" class="label">{sector_bytes}-byte sectors '
           f'(filled: moved for this request) in {line_bytes}-byte lines</text>']
    sector_x = {}
    for i, line in enumerate(touched_lines):
        x0 = 10 + i * line_w
        out.append(f'<rect x="{x0 - 2}" y="{bottom - 2}" width="{per_line * sec_w + 2}" '
                   f'height="{sec_w + 4 if sec_w < 20 else 24}" fill="none" stroke="#4a5568">'
                   f'<title>line {line}: bytes {line * line_bytes}-'
                   f'{(line + 1) * line_bytes - 1}</title></rect>')
        for k in range(per_line):
            sector = line * per_line + k
            sector_x[sector] = x0 + k * sec_w + sec_w / 2 - 1
            filled = sector in touched_sectors
            out.append(f'<rect class="sector{" touched" if filled else ""}" x="{x0 + k * sec_w}" '
                       f'y="{bottom}" width="{sec_w - 2}" height="{min(sec_w, 20)}" '
                       f'fill="{colour if filled else CELL}" stroke="{GRID}"><title>sector '
                       f'{sector}: bytes {sector * sector_bytes}-{(sector + 1) * sector_bytes - 1}'
                       f'</title></rect>')
        text = (f"line {line}: bytes {line * line_bytes}-{(line + 1) * line_bytes - 1}"
                if line_w >= 150 else f"{line}" if line_w < 40 else f"line {line}")
        out.append(f'<text x="{x0}" y="{bottom + min(sec_w, 20) + 14}" class="small">'
                   f'{_e(text)}</text>')
    for i, lane in enumerate(lanes):
        x = 10 + i * lane_w
        active = bool(addresses[lane])
        out.append(f'<rect class="lane" x="{x}" y="{top}" width="{lane_w - 2}" height="12" '
                   f'fill="{"#2d3748" if active else CELL}" stroke="{GRID}"><title>lane {i}: '
                   f'work-item {lane}'
                   + (f', element {elements[i]}, byte {addresses[lane]}' if active else
                      ' (inactive)') + '</title></rect>')
        for b in addresses[lane]:
            out.append(f'<line x1="{x + lane_w / 2 - 1}" y1="{top + 12}" '
                       f'x2="{sector_x[b // sector_bytes]}" y2="{bottom}" stroke="{colour}" '
                       f'stroke-opacity="0.5"/>')
    height = bottom + min(sec_w, 20) + 22
    return (f'<svg class="coalescing {sample["direction"]}" '
            f'xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}">' + "".join(out) + "</svg>")


def bank_picture(sample: dict, banks: int, bank_bytes: int) -> str:
    """One sub-group's local request: lanes (top) -> words -> banks (columns); the distinct
    words of one bank are stacked (each extra one is a wavefront more); lanes whose bank
    holds more than one distinct word are marked red."""
    lanes, elements = sample["lanes"], sample["elements"]
    col_w, lane_w = 15, 15
    by_bank: dict[int, list[int]] = {}
    for els in elements:
        for e in els:
            word = e * 4 // bank_bytes
            by_bank.setdefault(word % banks, [])
            if word not in by_bank[word % banks]:
                by_bank[word % banks].append(word)
    for words in by_bank.values():
        words.sort()
    depth = max((len(w) for w in by_bank.values()), default=1)
    captions = (f"lanes (work-items) of sub-group {sample['sub_group']}",
                f"banks 0-{banks - 1}: one column each, one row per distinct word",
                f"{depth} row{'s' if depth != 1 else ''} = "
                f"{depth} wavefront{'s' if depth != 1 else ''}")
    width = max(len(lanes) * lane_w + 20, banks * col_w + 20,
                *(round(LABEL_CHAR_PX * len(c)) + 4 for c in captions))
    top, bank_y = 30, 146
    out = [f'<text x="0" y="12" class="label">{_e(captions[0])}</text>',
           f'<text x="0" y="{bank_y - 32}" class="label">{_e(captions[1])}</text>',
           f'<text x="0" y="{bank_y - 17}" class="label">{_e(captions[2])}</text>']
    for b in range(banks):
        x = 10 + b * col_w
        out.append(f'<text x="{x}" y="{bank_y - 4}" class="tiny">{b}</text>')
        for j, word in enumerate(by_bank.get(b, [])):
            conflict = len(by_bank[b]) > 1
            out.append(f'<rect class="word{" conflict" if conflict else ""}" x="{x}" '
                       f'y="{bank_y + j * col_w}" width="{col_w - 2}" height="{col_w - 2}" '
                       f'fill="{HAZARD if conflict else LOAD}" fill-opacity="0.8"><title>bank {b}, '
                       f'word {word}</title></rect>')
    for i, lane in enumerate(lanes):
        x = 10 + i * lane_w
        words = [e * 4 // bank_bytes for e in elements[i]]
        conflict = any(len(by_bank[w % banks]) > 1 for w in words)
        out.append(f'<rect class="lane{" conflict" if conflict else ""}" x="{x}" y="{top}" '
                   f'width="{lane_w - 2}" height="12" '
                   f'fill="{HAZARD if conflict else ("#2d3748" if words else CELL)}" '
                   f'stroke="{GRID}"><title>lane {i}: work-item {lane}'
                   + (f', word(s) {words}, bank(s) {[w % banks for w in words]}' if words else
                      " (inactive)") + "</title></rect>")
        for w in words:
            b = w % banks
            j = by_bank[b].index(w)
            out.append(f'<line x1="{x + lane_w / 2 - 1}" y1="{top + 12}" '
                       f'x2="{10 + b * col_w + col_w / 2 - 1}" y2="{bank_y + j * col_w}" '
                       f'stroke="{HAZARD if len(by_bank[b]) > 1 else LOAD}" '
                       f'stroke-opacity="0.45"/>')
    height = bank_y + depth * col_w + 10
    return (f'<svg class="banks" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}">' + "".join(out) + "</svg>")


def seconds(s: float) -> str:
    """A time in seconds as short text with its unit and 3 significant digits: ``1.23 µs``,
    ``0.978 ns`` (from 1 ps to below 1 ns, in ns), ``1,234 s`` (from 1000 s, whole
    seconds), ``4.2e-13 s`` (below 1 ps), ``0 s``: in exponent notation only below 1 ps."""
    rounded = float(f"{s:.3g}")
    if abs(rounded) >= 1000:
        return f"{s:,.0f} s"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(rounded) >= scale:
            return f"{rounded / scale:.3g} {unit}"
    if abs(rounded) >= 1e-12:
        return f"{rounded / 1e-9:.3g} ns"
    return f"{s:.3g} s" if s else "0 s"


def time_picture(time: dict) -> str:
    """The model's time terms as horizontal bars (one scale), the binding ceiling dark, the
    terms added to it orange, each term resting on a guessed value hatched."""
    terms = time["terms_s"]
    top = max(terms.values()) or 1.0
    bar_w, row_h, name_w = 300, 22, 185     # name: up to 29 characters (with "(bound)")
    out = ['<defs><pattern id="guess" width="6" height="6" patternUnits="userSpaceOnUse" '
           'patternTransform="rotate(45)"><rect width="3" height="6" fill="#fff" '
           'fill-opacity="0.55"/></pattern></defs>']
    order = list(time["ceilings"]) + [t for t in time["added"] if t in terms]
    for i, term in enumerate(order):
        y = i * row_h + 4
        value = terms[term]
        w = max(1.0, bar_w * value / top)
        colour = ("#1a365d" if term == time["bound"] else
                  STORE if term in time["added"] else "#90cdf4")
        guessed = time["term_guessed_values"].get(term, [])
        tip = f"{term_name(term)}: {seconds(value)}; {time['term_methods'].get(term, '')}" + (
            f"; rests on guessed {', '.join(guessed)}" if guessed else "")
        out.append(f'<text x="0" y="{y + 14}" class="small">{_e(term_name(term))}'
                   f'{" (bound)" if term == time["bound"] else ""}</text>')
        out.append(f'<rect class="term{" bound" if term == time["bound"] else ""}" '
                   f'data-term="{_e(term)}" x="{name_w}" y="{y}" width="{w:.1f}" height="16" '
                   f'fill="{colour}"><title>{_e(tip)}</title></rect>')
        if guessed:
            out.append(f'<rect x="{name_w}" y="{y}" width="{w:.1f}" height="16" '
                       f'fill="url(#guess)"/>')
        out.append(f'<text x="{name_w + w + 6:.1f}" y="{y + 13}" class="small">'
                   f'{_e(seconds(value))}{" *" if guessed else ""}</text>')
    height = len(order) * row_h + 8
    width = name_w + bar_w + 90
    return (f'<svg id="time-svg" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}">' + "".join(out) + "</svg>")


def work_items_picture(doc: dict) -> str:
    """The chosen work-group's work-items as a grid (local id 0 across, 1 down), the
    work-items of this work-group's hazard examples marked red (title: which hazard)."""
    size = list(doc["work_group"]["local_size"]) + [1, 1]
    cols, rows = size[0], max(1, size[1]) * max(1, size[2] if len(size) > 2 else 1)
    cell = max(4, min(12, 192 // max(cols, rows)))
    marked: dict[int, list[str]] = {}
    for h in doc["hazards"]:
        if list(h["group_id"]) == doc["work_group"]["id"][:len(h["group_id"])] and h["group_id"]:
            for lid in h["local_ids"]:
                marked.setdefault(lid, []).append(f"{h['kind']} (barrier interval {h['epoch']})")
    out = []
    for lid in range(doc["work_group"]["work_items"]):
        r, c = divmod(lid, cols)
        hit = marked.get(lid)
        out.append(f'<rect class="work-item{" hazard" if hit else ""}" data-lid="{lid}" '
                   f'data-name="{work_item_name(doc["work_group"]["local_size"], lid)}" '
                   f'x="{c * cell}" '
                   f'y="{r * cell}" width="{cell - 1}" height="{cell - 1}" '
                   f'fill="{HAZARD if hit else "#a0aec0"}"><title>work-item '
                   f'{work_item_name(doc["work_group"]["local_size"], lid)} (local id {lid})'
                   + (": " + _e("; ".join(hit)) if hit else "") + '</title></rect>')
    w, h = cols * cell, rows * cell
    return (f'<svg id="work-items-svg" xmlns="http://www.w3.org/2000/svg" width="{w}" '
            f'height="{h}" viewBox="0 0 {w} {h}">' + "".join(out) + "</svg>")
