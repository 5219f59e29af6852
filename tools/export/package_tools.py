# SPDX-License-Identifier: Apache-2.0
"""The exporter's helpers that need no PyTorch: what Wharf's shims define, what a compiled
method imports and binds. Used by wharf_export.py and by tests/export (host CI)."""
import os
import re
import subprocess


def find_repo_file(rel):
    d = os.path.dirname(os.path.abspath(__file__))
    for _ in range(6):
        p = os.path.join(d, rel)
        if os.path.exists(p):
            return p
        d = os.path.dirname(d)
    return None


def wharf_shims(path=None):
    """The aoti_torch_* functions Wharf's shim library defines, parsed from its sources
    (`path`: the directory src/models/aoti or one file of it; default: found from this script)."""
    path = path or find_repo_file("src/models/aoti")
    if not path or not os.path.exists(path):
        return None, None
    sources = ([os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith((".cpp", ".cu", ".h"))]
               if os.path.isdir(path) else [path])
    names = set()
    for path_ in sources:
        with open(path_) as f:
            names |= set(re.findall(r"SHIM_API[^;{(]*?\b(aoti_torch_\w+)\s*\(", f.read(), flags=re.S))
    return names, path


def undefined_symbols(so):
    out = subprocess.run(["nm", "-D", "--undefined-only", so], capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[-2] == "U":  # weak (w, v) references may stay unresolved
            syms.append(parts[-1])
    return syms


def check_shims(so, shims):
    """Returns (needed aoti_torch_* functions, missing ones, other unresolved symbols).
    CUDA driver/runtime symbols (cu*) and versioned system-library symbols (name@GLIBC_...)
    are the system's; everything else must be a Wharf shim."""
    needed, missing, other = [], [], []
    for s in undefined_symbols(so):
        if "@" in s or s.startswith("cu"):
            continue
        if s.startswith("aoti_torch_"):
            needed.append(s)
            if shims is not None and s not in shims:
                missing.append(s)
        else:
            other.append(s)  # e.g. an embedded kernel's __<kernel>_start that was not embedded
    return sorted(needed), sorted(missing), sorted(other)


def compiled_constants(wrapper_cpp):
    """The constant table AOTInductor generated (what the .so binds at load time), read from
    its wrapper source: [{name, fqn, type, dtype, shape, from_folded}] in table order. The
    exported program may list more (a buffer Inductor folded into the code, such as rotary
    inv_freq) or name a tied weight differently (one constant for embed_tokens and lm_head)."""
    if not wrapper_cpp or not os.path.exists(wrapper_cpp):
        return None
    table = {}
    with open(wrapper_cpp) as f:
        src = f.read()
    for m in re.finditer(r"constants_info_\[(\d+)\]\.(\w+) = (.*?);\n", src):
        table.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3).strip()
    out = []
    for i in sorted(table):
        e = table[i]
        shape = [int(x) for x in re.findall(r"-?\d+", e.get("shape", ""))]
        out.append({"name": e.get("name", "").strip('"'), "fqn": e.get("original_fqn", "").strip('"'),
                    "type": re.sub(r".*ConstantType::(\w+).*", r"\1", e.get("type", "")),
                    "dtype": re.sub(r".*cached_torch_dtype_(\w+).*", r"\1", e.get("dtype", "")),
                    "shape": shape, "from_folded": e.get("from_folded") == "true"})
    return out
