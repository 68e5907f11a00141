"""What a compiled program does, read from its optimized HLO text: matmul FLOPs and HBM bytes with every loop body
counted as often as it runs, collectives by kind, and the custom calls.

XLA's own cost analysis costs a while loop's body once (a scanned 12-layer encoder reports about a twelfth of its
FLOPs) and prices each custom call at -1 (its "unknown" sentinel). Here each computation is costed once and its
callers multiply: a while loop by its known trip count (the `known_trip_count` XLA writes into the loop's backend
config), a fusion or call by 1. FLOPs are those of dots and convolutions (2 per multiply-add), what the analytic
model (AlbertConfig.flops_per_token) counts; elementwise work is left out of both.
"""
from __future__ import annotations

import collections
import dataclasses

import math
import re

# Bytes per element of HLO's primitive types (sub-byte types round up to a byte here: they do not occur).
_ITEMSIZE = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
             "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "s4": 1, "u4": 1, "token": 0}
_SHAPE = re.compile(r"\b(pred|[suf]\d+|bf16|c64|c128|f8e\w+|token)\[([\d,]*)\]")
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_CALLED = re.compile(r"\b(calls|to_apply|body|condition|true_computation|false_computation)=%?([\w.\-]+)")
_BRANCHES = re.compile(r"\b(?:branch_computations|called_computations)=\{([^}]*)\}")
_TRIP = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"(\d+)"')
_TARGET = re.compile(r'custom_call_target="([^"]+)"')

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
               "collective-broadcast", "ragged-all-to-all")
# No data moves through these, or their cost is their callees'.
_FREE = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "while", "conditional", "call",
         "after-all", "partition-id", "replica-id", "iota", "opt-barrier", "add-dependency", "async-done",
         "all-reduce-done", "all-gather-done", "collective-permute-done", "copy-done", "send-done", "recv-done"}
_IN_PLACE = {"dynamic-update-slice", "scatter"}
_SLICING = {"dynamic-slice", "slice", "gather"}


def _elements(dims: str) -> int:
    return math.prod(int(d) for d in dims.split(",") if d) if dims else 1


def _bytes_of(text: str) -> int:
    return sum(_elements(dims) * _ITEMSIZE.get(t, 1) for t, dims in _SHAPE.findall(text))


def _split_type(rest: str) -> tuple[str, str]:
    """'f32[2]{0} add(...)' or '(f32[2], s32[]) while(...)' -> (type text, the rest from the opcode on)."""
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                return rest[: i + 1], rest[i + 1:].lstrip()
    head, _, tail = rest.partition(" ")
    return head, tail


def _operands(call: str) -> tuple[str, str]:
    """'dot(f32[2,3] %a, f32[3] %b), lhs_...' -> ('f32[2,3] %a, f32[3] %b', ', lhs_...')."""
    start = call.index("(")
    depth = 0
    for i in range(start, len(call)):
        depth += call[i] == "("
        depth -= call[i] == ")"
        if depth == 0:
            return call[start + 1: i], call[i + 1:]
    return call[start + 1:], ""


@dataclasses.dataclass
class Instr:
    name: str
    opcode: str
    out_type: str
    operand_types: list[tuple[str, str]]  # (dtype, dims) of each operand
    attrs: str
    args: str = ""  # the operand text as printed (a constant's value)

    @property
    def out_bytes(self) -> int:
        return _bytes_of(self.out_type)


@dataclasses.dataclass
class Computation:
    name: str
    entry: bool
    instrs: list[Instr] = dataclasses.field(default_factory=list)

    @property
    def root(self) -> Instr | None:
        return self.instrs[-1] if self.instrs else None


def parse(text: str) -> dict[str, Computation]:
    comps: dict[str, Computation] = {}
    types: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            current = comps.setdefault(header.group(2), Computation(header.group(2), bool(header.group(1))))
            continue
        if current is None or line.strip() == "}":
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        out_type, call = _split_type(m.group(2))
        opcode = call.split("(", 1)[0].strip()
        if "(" not in call:
            continue
        operands, attrs = _operands(call)
        types[m.group(1)] = out_type
        current.instrs.append(Instr(m.group(1), opcode, out_type, _operand_types(operands, types), attrs, operands))
    return comps


def _operand_types(operands: str, types: dict[str, str]) -> list[tuple[str, str]]:
    """Each operand's (dtype, dims): printed inline, or the type its defining instruction printed (names are unique
    in a module, and an instruction is defined before it is used)."""
    out = []
    for piece in _top_level_split(operands):
        inline = _SHAPE.findall(piece)
        if inline:
            out.append(inline[0])
            continue
        name = piece.strip().split()[-1].lstrip("%") if piece.strip() else ""
        found = _SHAPE.findall(types.get(name, ""))
        out.append(found[0] if len(found) == 1 else ("tuple", "0"))
    return out


def _top_level_split(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _dot_flops(ins: Instr) -> float:
    out = sum(_elements(d) for _, d in _SHAPE.findall(ins.out_type)[:1])
    if ins.opcode == "dot":
        lhs = [int(x) for x in ins.operand_types[0][1].split(",") if x] if ins.operand_types else []
        m = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", ins.attrs)
        contracted = math.prod(lhs[int(i)] for i in m.group(1).split(",") if i) if m else 1
        return 2.0 * out * contracted
    return 2.0 * _conv_macs(ins)


def _window_pairs(size: int, out: int, inp: int, lo: int, stride: int, rhs_dilate: int, lhs_dilate: int) -> int:
    """(output position, window position) pairs of one spatial dimension that read a real input element, not
    padding: what a convolution's multiply-adds along that dimension come to."""
    total = 0
    for w in range(size):
        # input index (in the dilated input) of output o at window w: o*stride + w*rhs_dilate - lo
        first = -(-(lo - w * rhs_dilate) // stride)  # ceil
        last_pos = (inp - 1) * lhs_dilate
        last = (last_pos + lo - w * rhs_dilate) // stride
        lo_o, hi_o = max(first, 0), min(last, out - 1)
        if hi_o < lo_o:
            continue
        if lhs_dilate == 1:
            total += hi_o - lo_o + 1
        else:  # only positions landing on a real (undilated) element count
            total += sum(1 for o in range(lo_o, hi_o + 1) if (o * stride + w * rhs_dilate - lo) % lhs_dilate == 0)
    return total


def _conv_macs(ins: Instr) -> float:
    """Multiply-adds of an HLO convolution, counting only window positions over real input (the TPU compiler
    writes many dots as convolutions, some with padded windows that pick one slice of a kernel)."""
    labels = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", ins.attrs)
    if not labels or len(ins.operand_types) < 2:
        return 0.0
    lhs_l, rhs_l, out_l = labels.groups()
    lhs = [int(x) for x in ins.operand_types[0][1].split(",") if x]
    rhs = [int(x) for x in ins.operand_types[1][1].split(",") if x]
    out = [int(x) for x in (_SHAPE.findall(ins.out_type)[0][1].split(",") if _SHAPE.findall(ins.out_type) else []) if x]
    if len(lhs) != len(lhs_l) or len(rhs) != len(rhs_l) or len(out) != len(out_l):
        return 0.0
    window = re.search(r"window=\{([^}]*)\}", ins.attrs)
    fields = dict(f.split("=", 1) for f in window.group(1).split()) if window else {}

    def per_dim(key: str, default: int) -> list:
        return [p for p in fields[key].split("x")] if key in fields else None

    spatial = sorted(c for c in out_l if c.isdigit())
    sizes = per_dim("size", 1) or ["1"] * len(spatial)
    pads = per_dim("pad", 0) or ["0_0"] * len(spatial)
    strides = per_dim("stride", 1) or ["1"] * len(spatial)
    rdil = per_dim("rhs_dilate", 1) or ["1"] * len(spatial)
    ldil = per_dim("lhs_dilate", 1) or ["1"] * len(spatial)
    macs = float(out[out_l.index("b")] * out[out_l.index("f")] * rhs[rhs_l.index("i")])
    for k, d in enumerate(spatial):
        macs *= _window_pairs(int(sizes[k]), out[out_l.index(d)], lhs[lhs_l.index(d)], int(pads[k].split("_")[0]),
                              int(strides[k]), int(rdil[k]), int(ldil[k]))
    return macs


@dataclasses.dataclass
class Analysis:
    flops: float  # dots and convolutions, every loop body times its trip count
    flops_once: float  # the same with every loop body counted once (what XLA's cost analysis does)
    bytes: float  # HBM traffic estimate: operands and results of the unfused instructions, loops multiplied
    bytes_once: float
    collectives: dict  # kind -> {"count": n executed, "bytes": bytes moved per device}
    loops: list  # [{"name", "trip_count"}] (None where XLA did not know it)
    custom_calls: int  # custom calls XLA's optimal_seconds prices at -1 (see `_unknown_cost_calls`)
    custom_call_targets: dict  # target -> count, all of them

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _called(ins: Instr) -> list[tuple[str, str]]:
    found = [(kind, name) for kind, name in _CALLED.findall(ins.attrs)]
    for group in _BRANCHES.findall(ins.attrs):
        found += [("branch", n.strip().lstrip("%")) for n in group.split(",") if n.strip()]
    return found


def _trip_count(ins: Instr, comps: dict[str, Computation]) -> int | None:
    """A while loop's trip count: XLA's `known_trip_count` where it wrote one (CPU, GPU), else read from the loop's
    condition (the TPU compiler leaves it out): `counter < constant` with the counter starting at 0, as every
    lax.scan loop does."""
    m = _TRIP.search(ins.attrs)
    if m:
        return int(m.group(1))
    cond = comps.get(dict(_CALLED.findall(ins.attrs)).get("condition", ""))
    if cond is None or cond.root is None or cond.root.opcode != "compare" or "direction=LT" not in cond.root.attrs:
        return None
    constants = {i.name: i.args for i in cond.instrs if i.opcode == "constant"}
    names = [p.strip().split()[-1].lstrip("%") for p in _top_level_split(cond.root.args)]
    value = constants.get(names[1]) if len(names) == 2 else None
    return int(value) if value is not None and value.strip().lstrip("-").isdigit() else None


def _instr_bytes(ins: Instr, comps: dict[str, Computation]) -> float:
    if ins.opcode in _FREE or ins.opcode.endswith("-done"):
        return 0.0
    root = ins.opcode
    if ins.opcode == "fusion":
        callee = next((comps.get(n) for k, n in _called(ins) if k == "calls"), None)
        if callee is not None and callee.root is not None:
            root = callee.root.opcode
    out = ins.out_bytes
    sizes = [_elements(d) * _ITEMSIZE.get(t, 1) for t, d in ins.operand_types]
    if root in _IN_PLACE:  # the buffer is updated in place: only the update is read and written
        return 2.0 * sum(s for s in sizes if s != out)
    if root in _SLICING:  # only the slice is read
        return 2.0 * out + sum(s for s in sizes if s < out)
    return float(out + sum(sizes))


def analyse(text: str) -> Analysis:
    comps = parse(text)
    entry = next((c for c in comps.values() if c.entry), None)
    if entry is None:
        raise ValueError("no ENTRY computation in the HLO text")
    flops: dict[tuple[str, bool], float] = {}
    nbytes: dict[tuple[str, bool], float] = {}
    coll: collections.defaultdict = collections.defaultdict(lambda: {"count": 0, "bytes": 0.0})
    loops: list[dict] = []

    def cost(name: str, multiply: bool, fused: bool) -> tuple[float, float]:
        key = (name, multiply)
        if key in flops:
            return flops[key], nbytes[key]
        comp = comps.get(name)
        f = b = 0.0
        for ins in comp.instrs if comp else ():
            if ins.opcode in ("dot", "convolution"):
                f += _dot_flops(ins)
            if not fused:
                b += _instr_bytes(ins, comps)
            for kind, callee in _called(ins):
                if kind == "condition":
                    continue
                trips = _trip_count(ins, comps) if ins.opcode == "while" else 1
                times = (trips or 1) if multiply else 1
                cf, cb = cost(callee, multiply, fused or ins.opcode == "fusion" or kind == "to_apply")
                f += times * cf
                b += times * cb
        flops[key], nbytes[key] = f, b
        return f, b

    def visit(name: str, times: float, seen: tuple) -> None:  # collectives and loops, with their multipliers
        comp = comps.get(name)
        for ins in comp.instrs if comp else ():
            kind = next((c for c in COLLECTIVES if ins.opcode in (c, c + "-start")), None)
            if kind:
                coll[kind]["count"] += times
                coll[kind]["bytes"] += times * max([ins.out_bytes] + [_elements(d) * _ITEMSIZE.get(t, 1)
                                                                      for t, d in ins.operand_types])
            if ins.opcode == "while":
                loops.append({"name": ins.name, "trip_count": _trip_count(ins, comps)})
            for k, callee in _called(ins):
                if callee in seen or k in ("condition", "to_apply"):
                    continue
                trips = (_trip_count(ins, comps) or 1) if ins.opcode == "while" else 1
                visit(callee, times * trips, seen + (callee,))

    f_all, b_all = cost(entry.name, True, False)
    f_once, b_once = cost(entry.name, False, False)
    visit(entry.name, 1, (entry.name,))
    targets = collections.Counter(_TARGET.findall(text))
    return Analysis(flops=f_all, flops_once=f_once, bytes=b_all, bytes_once=b_once,
                    collectives={k: dict(v) for k, v in sorted(coll.items())}, loops=loops,
                    custom_calls=_unknown_cost_calls(comps), custom_call_targets=dict(sorted(targets.items())))


# Custom calls that XLA's model prices (buffer bookkeeping; the TPU's own kernels), not at the -1 sentinel.
# Measured with libtpu 0.0.42.1 on v5e: raw optimal_seconds -41.99 with 42 ConcatBitcast, 23 AllocateBuffer and 2
# tpu_custom_call outside fusions; -2.9999 with 3 ConcatBitcast and 30 AllocateBuffer.
_FREE_CALLS = {"AllocateBuffer", "tpu_custom_call"}


def _unknown_cost_calls(comps: dict[str, Computation]) -> int:
    """The custom calls that XLA's optimal_seconds prices at -1, its "unknown": those outside fusions (a fusion is
    costed as a whole), less the bookkeeping ones. Measured on v5e: three ConcatBitcast calls, raw -2.9999 s."""
    fused = {callee for c in comps.values() for i in c.instrs if i.opcode == "fusion" for _, callee in _called(i)}
    return sum(1 for name, c in comps.items() if name not in fused for i in c.instrs
               if i.opcode == "custom-call" and (_TARGET.search(i.attrs) or [None, ""])[1] not in _FREE_CALLS)


def xla_costs(compiled) -> dict:
    """XLA's cost analysis as a plain dict ({} where the backend has none, as the deviceless GPU compile)."""
    try:
        cost = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - some backends raise instead of returning None
        return {}
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else None
    return {k: float(v) for k, v in (cost or {}).items() if isinstance(v, (int, float))} if cost else {}



