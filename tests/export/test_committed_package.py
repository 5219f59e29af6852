# SPDX-License-Identifier: Apache-2.0
"""Host checks of the committed model package (no GPU, no PyTorch): its methods import only
functions Wharf's shims define, its manifest lists exactly the constants the compiled methods
bind, and its weight, update and reference files agree with the manifest.

    python3 tests/export/test_committed_package.py [PACKAGE_DIR]
"""
import json
import os
import re
import struct
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
import package_tools  # noqa: E402

PACKAGE = os.path.join(ROOT, "tests", "data", "packages", "tiny-llama-f32")
ST_DTYPES = {"F32": "float32", "BF16": "bfloat16", "F16": "float16", "I64": "int64"}


def safetensors_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return {k: (ST_DTYPES.get(v["dtype"], v["dtype"]), v["shape"]) for k, v in header.items()}


def so_strings(path, pattern=re.compile(rb"[A-Za-z_][A-Za-z0-9_.]{3,}")):
    with open(path, "rb") as f:
        return {m.group().decode() for m in pattern.finditer(f.read())}


class CommittedPackage(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(PACKAGE, "manifest.json")) as f:
            self.manifest = json.load(f)
        self.params = {p["fqn"]: (p["dtype"], p["shape"]) for p in self.manifest["weights"]["parameters"]}
        self.state = {s["fqn"]: (s["dtype"], s["shape"]) for s in self.manifest["state"]}
        self.methods = [os.path.join(PACKAGE, m["file"]) for m in self.manifest["methods"]]

    def test_methods_import_only_wharf_shims(self):
        shims, where = package_tools.wharf_shims(os.path.join(ROOT, "src", "models", "aoti"))
        self.assertTrue(shims, where)
        for so in self.methods:
            needed, missing, other = package_tools.check_shims(so, shims)
            self.assertTrue(needed, so)
            self.assertEqual(missing, [], f"{so} imports shim functions Wharf lacks")
            self.assertEqual(other, [], f"{so} imports symbols that are neither shims nor CUDA/libc")

    def test_manifest_lists_exactly_the_bound_constants(self):
        # The compiled methods carry their constants' original FQNs as strings; every such
        # name that looks like a model tensor must be listed (parameter or state), and every
        # listed name must be bound by some method.
        bound = set()
        for so in self.methods:
            bound |= {s for s in so_strings(so) if s.startswith(("model.", "lm_head.", "wharf_cache."))}
        listed = set(self.params) | set(self.state)
        self.assertEqual(bound, listed)

    def test_weight_files_hold_exactly_the_parameters(self):
        found = {}
        for rel in self.manifest["weights"]["files"]:
            for k, v in safetensors_header(os.path.join(PACKAGE, rel)).items():
                self.assertNotIn(k, found, f"{k} in two weight files")
                found[k] = v
        self.assertEqual(found, self.params)

    def test_update_and_reference_match_the_manifest(self):
        with open(os.path.join(PACKAGE, "reference.json")) as f:
            ref = json.load(f)
        update = safetensors_header(os.path.join(PACKAGE, ref["hot_update"]["file"]))
        for k, v in update.items():
            self.assertEqual(self.params.get(k), v, k)
        vocab = self.manifest["methods"][0]["outputs"][0]["shape"][-1]
        self.assertEqual(len(ref["prefill_logits"]), vocab)
        self.assertEqual(len(ref["greedy_tokens"]), ref["n_tokens"])
        self.assertTrue(all(0 <= t < vocab for t in ref["prompt"] + ref["greedy_tokens"]))
        aliases = self.manifest["weights"].get("aliases", {})
        for other, bound in aliases.items():
            self.assertIn(bound, self.params, other)
            self.assertNotIn(other, self.params, other)


    def test_batched_method_follows_the_contract(self):
        # decode_batch (issue 26): one step for N <= S sessions of a state arena of S; inputs in
        # the compiled forward's order, N a dimension 1..S; the same state FQNs as prefill/decode.
        methods = {m["name"]: m for m in self.manifest["methods"]}
        self.assertEqual(set(methods), {"prefill", "decode", "decode_batch"})
        m = methods["decode_batch"]
        S = m["session_capacity"]
        self.assertGreaterEqual(S, 1)
        self.assertEqual(m["inputs"], [{"name": "input_ids", "dtype": "int64", "shape": ["N", 1]},
                                       {"name": "cache_position", "dtype": "int64", "shape": ["N"]},
                                       {"name": "slots", "dtype": "int64", "shape": ["N"]}])
        vocab = methods["decode"]["outputs"][0]["shape"][-1]
        self.assertEqual(m["outputs"], [{"name": "logits", "dtype": "float32", "shape": ["N", 1, vocab]}])
        self.assertEqual(m["dims"], {"N": {"min": 1, "max": S, "pad": "repeat"}})
        for other in ("prefill", "decode"):
            self.assertNotIn("session_capacity", methods[other])
        # The batched .so binds the same states (the arenas keep the per-session FQNs).
        strings = so_strings(os.path.join(PACKAGE, m["file"]))
        self.assertEqual({s for s in strings if s.startswith("wharf_cache.")}, set(self.state))

    def test_batched_reference_matches_the_manifest(self):
        with open(os.path.join(PACKAGE, "reference.json")) as f:
            ref = json.load(f)
        b = ref["batched"]
        methods = {m["name"]: m for m in self.manifest["methods"]}
        S = methods["decode_batch"]["session_capacity"]
        vocab = methods["decode"]["outputs"][0]["shape"][-1]
        self.assertEqual(b["session_capacity"], S)
        rows = b["rows"]
        slots = [r["slot"] for r in rows]
        self.assertEqual(len(set(slots)), len(slots), "two rows in one slot")
        self.assertTrue(all(0 <= s < S for s in slots))
        self.assertEqual(sorted(b["steps"][0]), list(range(len(rows))), "every row takes part in the first step")
        for i, r in enumerate(rows):
            steps = sum(i in step for step in b["steps"])
            self.assertEqual(len(r["tokens"]), 1 + steps, i)
            self.assertLessEqual(len(r["prompt"]) + steps, self.manifest["max_seq_len"], i)
            self.assertEqual(len(r["first_step_logits"]), vocab, i)
            self.assertEqual(int(max(range(vocab), key=lambda t: r["first_step_logits"][t])), r["tokens"][1], i)
        for tag in ("exported_batch", "aoti_batch"):
            check = ref["checks"][tag]
            self.assertTrue(check["logits_ok"] and check["other_slots_unchanged"] and check["tokens_match_eager"], tag)


    def test_prefill_may_be_padded_and_was_checked_padded(self):
        # The exporter marks prefill's T "pad": "repeat" (graph buckets may pad it by repeating
        # the last token and position) once each row's mask is at its own cache_position, and
        # checks the padded prefill against the unpadded one (exported and compiled).
        methods = {m["name"]: m for m in self.manifest["methods"]}
        p = methods["prefill"]
        self.assertEqual(p["inputs"], [{"name": "input_ids", "dtype": "int64", "shape": [1, "T"]},
                                       {"name": "cache_position", "dtype": "int64", "shape": ["T"]}])
        self.assertEqual(p["dims"], {"T": {"min": 1, "max": self.manifest["max_seq_len"], "pad": "repeat"}})
        self.assertNotIn("dims", methods["decode"])
        with open(os.path.join(PACKAGE, "reference.json")) as f:
            ref = json.load(f)
        for tag in ("exported_prefill_pad", "aoti_prefill_pad"):
            check = ref["checks"][tag]
            self.assertTrue(check["ok"], tag)
            self.assertLessEqual(check["max_rel_diff"], check["tolerance"], tag)
            self.assertGreaterEqual(len(check["cases"]), 5, tag)
            self.assertTrue(all(c["same_greedy_token"] for c in check["cases"]), tag)
            self.assertTrue(any(c["start"] > 0 for c in check["cases"]), f"{tag}: no prefill past position 0")


class CompiledConstants(unittest.TestCase):
    def test_reads_the_generated_constant_table(self):
        src = """    constants_info_[0].name = "lm_head_weight";
    constants_info_[0].dtype = cached_torch_dtype_bfloat16;
    constants_info_[0].from_folded = false;
    constants_info_[0].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[0].shape = {256, 64};
    constants_info_[0].original_fqn = "lm_head.weight";
    constants_info_[1].name = "_FOLDED_CONST_add_3";
    constants_info_[1].dtype = cached_torch_dtype_float32;
    constants_info_[1].from_folded = true;
    constants_info_[1].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[1].shape = {64};
    constants_info_[1].original_fqn = "_FOLDED_CONST_add_3";
"""
        with tempfile.NamedTemporaryFile("w", suffix=".wrapper.cpp", delete=False) as f:
            f.write(src)
        try:
            table = package_tools.compiled_constants(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(table, [
            {"name": "lm_head_weight", "fqn": "lm_head.weight", "type": "Parameter", "dtype": "bfloat16",
             "shape": [256, 64], "from_folded": False},
            {"name": "_FOLDED_CONST_add_3", "fqn": "_FOLDED_CONST_add_3", "type": "FoldedConstant",
             "dtype": "float32", "shape": [64], "from_folded": True}])


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        PACKAGE = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
