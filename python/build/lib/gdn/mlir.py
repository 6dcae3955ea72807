"""MLIR text shared by every emitter in the package, and the test programs
of the delta-rule ops run with mlir-runner.

The helpers every emitter uses live here so that all of them write the same
text: `tensor_type` (the one formatter of tensor types), `format_scale` (f32
attributes as MLIR float literals) and the element-type rounding
(`round_to_element_type`, over `float32_to_bf16` / `bf16_to_float32`, also
used by gdn.safetensors).

The test programs embed their inputs bit-exactly as hex dense constants and
print every result as the int32 bit pattern of its f32 value, so nothing is
lost to decimal printing and the comparison against the float64 reference
sees exactly what the compiled code computed.
"""

import os
import re
import subprocess
import tempfile

import numpy as np

ELEMENT_TYPES = ("f32", "bf16", "f16")


def format_scale(scale):
    """A float as an MLIR float literal: repr(float(scale)), with a decimal
    point added to exponent forms ('1e-05' -> '1.0e-05'), which the MLIR
    lexer does not take as floats otherwise."""
    text = repr(float(scale))
    if "." not in text and ("e" in text or "E" in text):
        mantissa, exponent = text.lower().split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def tensor_type(shape, element_type="f32", dynamic_dims=()):
    """`tensor<AxBx...xT>`; a size given as "?" or listed in dynamic_dims
    (positions) is dynamic."""
    dims = ["?" if i in dynamic_dims else str(d) for i, d in enumerate(shape)]
    return "tensor<" + "x".join(dims + [element_type]) + ">"


def float32_to_bf16(x):
    """bf16 bit patterns (uint16, x's shape) of float32 values, rounded to
    nearest even. NaNs become quiet NaNs of the same sign: rounding a NaN's
    bit pattern can carry into the exponent or the sign."""
    f32 = np.asarray(x, dtype=np.float32)
    flat = np.ravel(f32)      # 1-d: numpy 1.x cannot shift 0-d uint arrays
    bits = flat.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(flat)
    if np.any(nan):
        sign = (flat.view(np.uint32)[nan] >> 16) & 0x8000
        rounded[nan] = (0x7FC0 | sign).astype(np.uint16)
    return rounded.reshape(f32.shape)


def bf16_to_float32(bits):
    """The float32 values (exact) of bf16 bit patterns."""
    bits = np.asarray(bits, dtype=np.uint16)
    flat = np.ravel(bits).astype(np.uint32)
    return (flat << 16).view(np.float32).reshape(bits.shape)


def round_to_element_type(x, element_type):
    """Rounds x to `element_type`; returns (storage array, values as f32).

    bf16 has no numpy dtype, so it is stored as its uint16 bit pattern
    (round to nearest even).
    """
    x = np.asarray(x, dtype=np.float32)
    if element_type == "f32":
        return x, x
    if element_type == "f16":
        h = x.astype(np.float16)
        return h, h.astype(np.float32)
    if element_type == "bf16":
        storage = float32_to_bf16(x)
        return storage, bf16_to_float32(storage)
    raise ValueError(f"unsupported element type {element_type!r}")


def dense(storage, element_type):
    """A bit-exact dense constant of a stored array."""
    data = np.ascontiguousarray(storage).tobytes()
    return (f'arith.constant dense<"0x{data.hex().upper()}"> : '
            f'{tensor_type(storage.shape, element_type)}')


class _Builder:
    def __init__(self):
        self.lines = []
        self.counter = 0

    def value(self, text):
        name = f"%v{self.counter}"
        self.counter += 1
        self.lines.append(f"    {name} = {text}")
        return name


def _print_as_bits(builder, value, shape, element_type, dynamic_dims):
    """Appends ops that print `value` as the int32 bits of its f32 value."""
    rank = len(shape)
    src_type = tensor_type(shape, element_type, dynamic_dims)
    static_type = tensor_type(shape, element_type)
    cast = builder.value(f"tensor.cast {value} : {src_type} to {static_type}")
    empty = builder.value(f"tensor.empty() : {tensor_type(shape, 'i32')}")
    dims = ", ".join(f"d{i}" for i in range(rank))
    identity = f"affine_map<({dims}) -> ({dims})>"
    extend = ("%f = arith.extf %in : " + element_type + " to f32"
              if element_type != "f32" else "%f = arith.addf %in, %zero : f32")
    iterators = ", ".join(['"parallel"'] * rank)
    bits = builder.value(
        f"linalg.generic {{indexing_maps = [{identity}, {identity}], "
        f"iterator_types = [{iterators}]}} "
        f"ins({cast} : {static_type}) outs({empty} : "
        f"{tensor_type(shape, 'i32')}) {{\n"
        f"    ^bb0(%in: {element_type}, %out: i32):\n"
        f"      %zero = arith.constant 0.0 : f32\n"
        f"      {extend}\n"
        f"      %b = arith.bitcast %f : f32 to i32\n"
        f"      linalg.yield %b : i32\n"
        f"    }} -> {tensor_type(shape, 'i32')}")
    buffer = builder.value(
        f"bufferization.to_buffer {bits} : {tensor_type(shape, 'i32')} to "
        f"memref<{'x'.join(map(str, shape))}xi32>")
    unranked = builder.value(
        f"memref.cast {buffer} : memref<{'x'.join(map(str, shape))}xi32> to "
        f"memref<*xi32>")
    builder.lines.append(
        f"    func.call @printMemrefI32({unranked}) : (memref<*xi32>) -> ()")


def delta_rule_program(q, k, v, g, beta, initial_state=None, scale=1.0,
                       element_type="f32", beta_element_type="f32",
                       dynamic=True, step=False):
    """Returns (mlir text, q/k/v/beta as the f32 values the program sees).

    With step=True the arrays are one token ([B, H, K], ...) and the program
    calls gdn.delta_rule_step (initial_state is then required).
    """
    stored = {}
    seen = {}
    for name, array, etype in (("q", q, element_type), ("k", k, element_type),
                               ("v", v, element_type),
                               ("g", g, "f32"),
                               ("beta", beta, beta_element_type)):
        stored[name], seen[name] = round_to_element_type(array, etype)
    if initial_state is not None:
        stored["state"] = np.asarray(initial_state, dtype=np.float32)
        seen["state"] = stored["state"]
    if step and initial_state is None:
        raise ValueError("gdn.delta_rule_step needs a state")

    token_dims = (0,) if step else (0, 1)
    dyn = token_dims if dynamic else ()
    types = {
        "q": (q.shape, element_type, dyn), "k": (k.shape, element_type, dyn),
        "v": (v.shape, element_type, dyn), "g": (g.shape, "f32", dyn),
        "beta": (beta.shape, beta_element_type, dyn),
    }
    if initial_state is not None:
        types["state"] = (stored["state"].shape, "f32",
                          (0,) if dynamic else ())
    o_shape = v.shape
    state_shape = (v.shape[0], v.shape[-2], q.shape[-1], v.shape[-1])
    o_type = tensor_type(o_shape, element_type, dyn)
    s_type = tensor_type(state_shape, "f32", (0,) if dynamic else ())

    names = list(types)
    arg_types = [tensor_type(*types[n]) for n in names]
    op = "gdn.delta_rule_step" if step else "gdn.delta_rule"
    operands = ", ".join(f"%{n}" for n in names[:5])
    if initial_state is not None:
        operands += (f", %state" if step else " initial_state(%state)")
    kernel = [
        f"  func.func @kernel({', '.join(f'%{n}: {t}' for n, t in zip(names, arg_types))})"
        f" -> ({o_type}, {s_type}) {{",
        f"    %o, %s = {op} {operands} {{scale = {format_scale(scale)} : f32}}"
        f" : ({', '.join(arg_types)}) -> ({o_type}, {s_type})",
        f"    return %o, %s : {o_type}, {s_type}",
        "  }",
    ]
    b = _Builder()
    args = []
    for n in names:
        const = b.value(dense(stored[n], types[n][1]))
        static_type = tensor_type(stored[n].shape, types[n][1])
        args.append(b.value(f"tensor.cast {const} : {static_type} to "
                            f"{tensor_type(*types[n])}"))
    b.lines.append(
        f"    %o, %s = func.call @kernel({', '.join(args)}) : "
        f"({', '.join(arg_types)}) -> ({o_type}, {s_type})")
    _print_as_bits(b, "%o", o_shape, element_type, dyn)
    _print_as_bits(b, "%s", state_shape, "f32", (0,) if dynamic else ())
    text = "\n".join(
        ["module {",
         "  func.func private @printMemrefI32(memref<*xi32>) "
         "attributes {llvm.emit_c_interface}"]
        + kernel
        + ["  func.func @main() {"] + b.lines + ["    return", "  }", "}", ""])
    return text, seen


_MEMREF = re.compile(r"sizes = \[([0-9, ]*)\].*?data =\s*(.*?)(?=Unranked Memref|\Z)",
                     re.S)


def parse_printed_bits(text):
    """Parses printMemrefI32 output into float32 arrays."""
    arrays = []
    for sizes, data in _MEMREF.findall(text):
        shape = tuple(int(s) for s in sizes.split(",") if s.strip())
        ints = np.array([int(x) for x in re.findall(r"-?\d+", data)],
                        dtype=np.int64)
        arrays.append(ints.astype(np.uint32).view(np.float32).reshape(shape))
    return arrays


def run_program(text, gdn_opt, mlir_runner, shared_libs,
                pipeline="gdn-lower-to-cpu"):
    """Lowers `text` with gdn-opt and runs @main with mlir-runner; returns
    the printed arrays."""
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "program.mlir")
        with open(source, "w") as f:
            f.write(text)
        lowered = subprocess.run(
            [gdn_opt, source, f"--pass-pipeline=builtin.module({pipeline})"],
            capture_output=True, text=True)
        if lowered.returncode != 0:
            raise RuntimeError(f"gdn-opt failed:\n{lowered.stderr}")
        ran = subprocess.run(
            [mlir_runner, "-e", "main", "-entry-point-result=void",
             "-shared-libs=" + ",".join(shared_libs)],
            input=lowered.stdout, capture_output=True, text=True)
        if ran.returncode != 0:
            raise RuntimeError(f"mlir-runner failed:\n{ran.stderr}")
        return parse_printed_bits(ran.stdout)
