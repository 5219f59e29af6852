# SPDX-License-Identifier: Apache-2.0
"""Compiles the small model of Wharf's offloader tests with AOTInductor, libtorch-free, with the
offload points inside the compiled code.

Run on the GPU machine (it has PyTorch, Triton and safetensors):
    python3 tools/aoti/compile_offload_model.py OUT_DIR
    python3 tools/aoti/compile_offload_model.py --dynamic-rows OUT_DIR    (offload_tiny_dyn, below)
Writes to OUT_DIR:
    offload_tiny.so             the compiled model (kernels embedded, constants not in the .so)
    offload_tiny.safetensors    its weights by FQN, and the conversation state's initial value
    reference.safetensors       inputs and PyTorch eager outputs: a 6-step conversation, and the
                                same conversation with layer 3's weights replaced after step 2
    offload_tiny.wrapper.cpp    the generated C++ of the model (what it calls, in which order)
    compile_log.json            torch version, options, each attempt's outcome, the imported
                                shims and the order of offload calls and layer weights in the
                                generated wrapper

The offload points are two custom ops, identity on the activations so that data dependencies
order them between the layers' kernels:
    wharf::offload_wait(Tensor x, int layer) -> Tensor     before layer `layer` reads weights
    wharf::offload_issued(Tensor x, int layer) -> Tensor   after its last kernel was issued
AOTInductor's `custom_ops_to_c_shims` makes the generated wrapper call them as C functions,
named by its convention aoti_torch_<device>_<op name>: aoti_torch_cuda_offload_wait(x, layer,
&ret) and aoti_torch_cuda_offload_issued(...), which libwharf_aoti_shim.so exports; they call
into the offloader of the run the model executes for (docs/decisions.md, "Offloaded compiled
models"). Their outputs are fresh tensors (a copy of x): a custom op may not return an alias of
its input, and Inductor may write in place into a buffer it believes fresh.

The model: a conversation state [4, 64] (a mutated buffer, session state in Wharf) added to
the input x [4, 64]; 6 layers h = h + w2(silu(w1(rmsnorm(h)))) (64 -> 128 -> 64); the state
becomes tanh(h); the output is h. Layer weights are used only together with the activations,
so no kernel reads them before the layer's wait. No runtime constant folding: a folded
constant computed from an offloaded weight would read its slot at the wrong time.

--dynamic-rows: the same model with the input's first dimension dynamic (torch.export Dim
"rows", 1..16), for graphs of several input shapes sharing one offload ring (issue 25). Its
files are named offload_tiny_dyn.* instead (same layout, same weights: the same seed). The
state is [1, 64] (added to every row) and becomes the mean over the rows of tanh(h), so that
it does not depend on the row count. reference.safetensors holds one 6-step conversation
whose row counts alternate, ROWS_SEQ = 2, 4, 8, 2, 4, 8, named by step and row count:
x.step{t}.rows{R} [R, 64], out.step{t}.rows{R}, out_updated.step{t}.rows{R} (layer 3's
weights replaced after step 2, as above), update.<fqn>, and rows (I64 [6]: the sequence).
"""
import json
import os
import re
import subprocess
import sys
import time
import traceback
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F

from compile_tiny_decoder import RMSNorm  # the same norm as the tiny decoder (this directory)

DIM, FFN, LAYERS, BATCH, STEPS, UPDATE_AFTER, UPDATED_LAYER = 64, 128, 6, 4, 6, 3, 3
ROWS_SEQ, ROWS_MIN, ROWS_MAX = [2, 4, 8, 2, 4, 8], 1, 16  # --dynamic-rows


@torch.library.custom_op("wharf::offload_wait", mutates_args=())
def offload_wait(x: torch.Tensor, layer: int) -> torch.Tensor:
    return x.clone()


@offload_wait.register_fake
def _(x, layer):
    return torch.empty_like(x)


@torch.library.custom_op("wharf::offload_issued", mutates_args=())
def offload_issued(x: torch.Tensor, layer: int) -> torch.Tensor:
    return x.clone()


@offload_issued.register_fake
def _(x, layer):
    return torch.empty_like(x)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = RMSNorm(DIM)
        self.w1 = nn.Linear(DIM, FFN, bias=False)
        self.w2 = nn.Linear(FFN, DIM, bias=False)

    def forward(self, h):
        return h + self.w2(F.silu(self.w1(self.norm(h))))


class OffloadTiny(nn.Module):
    def __init__(self, dynamic_rows=False):
        super().__init__()
        self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])
        self.dynamic_rows = dynamic_rows
        self.register_buffer("state", torch.zeros(1 if dynamic_rows else BATCH, DIM))

    def forward(self, x):
        h = x + self.state
        for i, layer in enumerate(self.layers):
            h = torch.ops.wharf.offload_wait(h, i)
            h = layer(h)
            h = torch.ops.wharf.offload_issued(h, i)
        if self.dynamic_rows:  # one state row for any row count
            self.state.copy_(torch.tanh(h).mean(0, keepdim=True))
        else:
            self.state.copy_(torch.tanh(h))
        return h


def conversation(m, xs, update=None):
    """Runs the steps; `update` (state-dict entries) is loaded after UPDATE_AFTER steps."""
    m.state.zero_()
    outs = []
    for t, x in enumerate(xs):
        if update is not None and t == UPDATE_AFTER:
            with torch.no_grad():
                for k, v in update.items():
                    m.get_parameter(k).copy_(v)
        outs.append(m(x).detach().clone())
    return outs


def wrapper_order(src):
    """The offload calls and the kernel calls reading layer weights in the generated wrapper's
    run_impl, in order (views of a weight made earlier count where a kernel gets them)."""
    start = src.find("AOTInductorModel::run_impl(")
    body = src[start:] if start >= 0 else src
    alias = {}
    order = []
    for line in body.splitlines():
        if "constants_->at(" in line:
            continue
        m = re.search(r"aoti_torch_cuda_offload_(wait|issued)\([^,]+,\s*(\d+)", line)
        if m:
            order.append(f"{m.group(1)}({m.group(2)})")
            continue
        weights = set(re.findall(r"layers_(\d+)_(norm|w1|w2)_weight", line))
        a = re.match(r"\s*(?:auto|AtenTensorHandle|RAIIAtenTensorHandle)\s+(\w+)\s*=", line)
        if a and weights and "call_triton_" not in line:
            alias[a.group(1)] = weights
            continue
        if "call_triton_" in line or "aoti_torch_cuda_" in line:
            for name in re.findall(r"\b\w+\b", line):
                weights |= alias.get(name, set())
            for w in sorted(weights):
                order.append(f"use(layers.{w[0]}.{w[1]})")
    return order


def check_order(order):
    """Every use of layer L's weights lies between wait(L) and issued(L); waits in order."""
    open_layer = None
    seen = []
    problems = []
    for ev in order:
        if ev.startswith("wait("):
            open_layer = int(ev[5:-1])
            seen.append(open_layer)
        elif ev.startswith("issued("):
            if open_layer != int(ev[7:-1]):
                problems.append(f"{ev} while layer {open_layer} is open")
            open_layer = None
        else:
            layer = int(ev.split(".")[1])
            if layer != open_layer:
                problems.append(f"{ev} outside its layer's wait/issued (open: {open_layer})")
    if seen != list(range(LAYERS)):
        problems.append(f"waits in order {seen}")
    return problems


def main():
    args = sys.argv[1:]
    dynamic_rows = "--dynamic-rows" in args
    args = [a for a in args if a != "--dynamic-rows"]
    if len(args) != 1:
        sys.exit("usage: compile_offload_model.py [--dynamic-rows] OUT_DIR")
    out = args[0]
    name_ = "offload_tiny_dyn" if dynamic_rows else "offload_tiny"
    os.makedirs(out, exist_ok=True)
    log = {"torch": torch.__version__, "cuda": torch.version.cuda, "attempts": []}
    dev = "cuda"
    torch.manual_seed(0)
    m = OffloadTiny(dynamic_rows).to(dev).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    from safetensors.torch import save_file

    weights = {k: v.detach().contiguous().cpu() for k, v in m.state_dict().items()}
    save_file(weights, os.path.join(out, f"{name_}.safetensors"))
    gen = torch.Generator(device="cpu").manual_seed(1)
    rows = ROWS_SEQ if dynamic_rows else [BATCH] * STEPS
    xs = [torch.randn(rows[t], DIM, generator=gen).to(dev) for t in range(STEPS)]
    update = {f"layers.{UPDATED_LAYER}.w1.weight": 0.5 * m.layers[UPDATED_LAYER].w1.weight.detach().clone(),
              f"layers.{UPDATED_LAYER}.w2.weight": -1.0 * m.layers[UPDATED_LAYER].w2.weight.detach().clone()}
    with torch.no_grad():
        plain = conversation(m, xs)
        updated = conversation(m, xs, update)
        for k, v in weights.items():  # back to the saved weights for the export
            if k != "state":
                m.get_parameter(k).copy_(v.to(dev))
        m.state.zero_()
    if dynamic_rows:  # the row count changes from step to step: a tensor per step
        ref = {"rows": torch.tensor(rows, dtype=torch.int64)}
        for t in range(STEPS):
            ref[f"x.step{t}.rows{rows[t]}"] = xs[t].cpu()
            ref[f"out.step{t}.rows{rows[t]}"] = plain[t].cpu()
            ref[f"out_updated.step{t}.rows{rows[t]}"] = updated[t].cpu()
    else:
        ref = {"x": torch.stack(xs).cpu(), "out": torch.stack(plain).cpu(), "out_updated": torch.stack(updated).cpu()}
    ref.update({"update." + k: v.cpu().contiguous() for k, v in update.items()})
    save_file(ref, os.path.join(out, "reference.safetensors"))
    log["reference"] = {"steps": STEPS, "update_after": UPDATE_AFTER, "updated_layer": UPDATED_LAYER,
                        "first_diff_step": next((t for t in range(STEPS) if not torch.equal(plain[t], updated[t])), None)}

    if dynamic_rows:
        log["reference"]["rows"] = rows
        # The example has 4 rows (not 1: export specializes a dimension whose example is 0 or 1).
        example = next(x for x in xs if x.shape[0] == 4)
        ep = None
        for lo in (ROWS_MIN, 2):  # 2: if this torch refuses a dynamic dimension from 1
            try:
                rows_dim = torch.export.Dim("rows", min=lo, max=ROWS_MAX)
                ep = torch.export.export(m, (example,), dynamic_shapes={"x": {0: rows_dim}}, strict=False)
                log["rows_dim"] = {"min": lo, "max": ROWS_MAX}
                break
            except Exception as e:  # noqa: BLE001
                log.setdefault("export_errors", []).append(f"min {lo}: {type(e).__name__}: {str(e)[:2000]}")
        if ep is None:
            with open(os.path.join(out, "compile_log.json"), "w") as f:
                json.dump(log, f, indent=1)
            sys.exit("torch.export failed: " + "; ".join(log["export_errors"]))
    else:
        ep = torch.export.export(m, (xs[0],), strict=False)
    log["graph_ops"] = sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})
    shims = {
        torch.ops.wharf.offload_wait.default: [
            "AOTITorchError aoti_torch_cuda_offload_wait(AtenTensorHandle x, int64_t layer, AtenTensorHandle* ret)"],
        torch.ops.wharf.offload_issued.default: [
            "AOTITorchError aoti_torch_cuda_offload_issued(AtenTensorHandle x, int64_t layer, AtenTensorHandle* ret)"],
    }
    base = {
        "aot_inductor.package_constants_in_so": False,
        "aot_inductor.embed_kernel_binary": True,
        "aot_inductor.use_runtime_constant_folding": False,
        "aot_inductor.link_libtorch": False,
        "aot_inductor.custom_ops_to_c_shims": shims,
    }
    variants = [
        ("triton_gemm", {"max_autotune": True, "max_autotune_gemm_backends": "TRITON"}),
        ("default", {}),
    ]
    done = False
    for name, extra in variants:
        opts = dict(base, **extra)
        t0 = time.time()
        attempt = {"name": name, "options": {k: str(v) for k, v in opts.items()}}
        try:
            pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(out, f"{name}.pt2"),
                                                           inductor_configs=opts)
            attempt["seconds"] = round(time.time() - t0, 1)
            with zipfile.ZipFile(pkg) as z:
                names = z.namelist()
                attempt["package_files"] = names
                sos = [n for n in names if n.endswith(".so")]
                wrapper = ""
                for n in names:
                    if n.endswith("wrapper.cpp"):
                        wrapper = z.read(n).decode()
                if sos:
                    with z.open(sos[0]) as f, open(os.path.join(out, f"{name_}.so"), "wb") as g:
                        g.write(f.read())
            os.remove(pkg)
            so = os.path.join(out, f"{name_}.so")
            und = subprocess.run(["nm", "-D", "--undefined-only", so], capture_output=True, text=True).stdout
            attempt["undefined_aoti"] = sorted({l.split()[-1] for l in und.splitlines() if "aoti" in l})
            need = subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout
            attempt["needed"] = [l.split("[")[1].rstrip("]") for l in need.splitlines() if "NEEDED" in l]
            attempt["so_bytes"] = os.path.getsize(so)
            order = wrapper_order(wrapper)
            attempt["wrapper_order"] = order
            attempt["order_problems"] = check_order(order)
            # The order check is a diagnostic (read by a person, and by the GPU test's outputs):
            # a false alarm from a wrapper layout it does not know must not discard a model.
            attempt["ok"] = "aoti_torch_cuda_offload_wait" in attempt["undefined_aoti"]
            # The generated C++ of the model kept, to read what it calls and in which order.
            keep = name_ if attempt["ok"] else name
            with open(os.path.join(out, f"{keep}.wrapper.cpp"), "w") as f:
                f.write(wrapper)
            done = attempt["ok"]
        except Exception as e:  # noqa: BLE001
            attempt["seconds"] = round(time.time() - t0, 1)
            attempt["ok"] = False
            attempt["error"] = f"{type(e).__name__}: {str(e)[:2000]}"
            attempt["trace"] = traceback.format_exc()[-4000:]
        log["attempts"].append(attempt)
        with open(os.path.join(out, "compile_log.json"), "w") as f:
            json.dump(log, f, indent=1)
        if done:
            break
    for a in log["attempts"]:
        print(a["name"], "ok" if a.get("ok") else "FAILED", a.get("seconds"), a.get("error", "")[:1500])
        print("  needed:", a.get("needed"), "shims:", a.get("undefined_aoti"))
        print("  order problems:", a.get("order_problems"))
    print("reference:", log["reference"])
    sys.exit(0 if done else 1)


if __name__ == "__main__":
    main()
