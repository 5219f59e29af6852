# SPDX-License-Identifier: Apache-2.0
"""Host checks of wharf_sender.py (python3 only: no PyTorch, no GPU).

- The plan encodes as tests/data/rank_plan.golden.hex, the bytes tests/unit/rank_protocol_test.cpp
  pins for the C++ side; the header, vote and pieces follow src/replicas/rank_protocol.h.
- With --server PATH (ctest passes build/tests/wharf_sender_server): end to end over Wharf's
  host transport, the sender as rank 0 and one or two Wharf server processes on the host
  backend: two pushes are served with exactly the pushed weights, a push a server cannot
  stage (a wrong shape) fails on the sender naming that rank with nothing changed, and the
  next push goes through.

    python3 tools/sender/test_wharf_sender.py [--server build/tests/wharf_sender_server]
"""

import array
import json
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import wharf_sender as ws  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
SERVER = None  # set from --server


def golden_bytes():
    out = bytearray()
    with open(os.path.join(ROOT, "tests", "data", "rank_plan.golden.hex")) as f:
        for line in f:
            if line.startswith("#"):
                continue
            out += bytes(int(tok, 16) for tok in line.split())
    return bytes(out)


class Protocol(unittest.TestCase):
    def test_plan_is_the_golden_bytes(self):
        plan = ws.encode_plan([("embed", 0, [64, 32], 64 * 32 * 4), ("layers.0.norm", 2, [3], 6), ("scale", 7, [], 1)])
        self.assertEqual(plan, golden_bytes())
        self.assertEqual(len(plan) % 8, 0)

    def test_header_vote_and_pieces(self):
        h = ws.encode_header(11, 3, 100, 128, "why")
        self.assertEqual(len(h), 1024)
        self.assertEqual(h[:24], bytes.fromhex("0b000000" "03000000" "6400000000000000" "8000000000000000"))
        self.assertEqual(h[24:28], b"why\0")
        self.assertEqual(len(ws.encode_header(text="x" * 5000)), 1024)
        self.assertEqual(h[-1], 0, "the message stays NUL-terminated")
        self.assertEqual(ws.encode_vote(0, 4), 4 << 32)
        self.assertEqual(ws.encode_vote(1, 4, 11), (1 << 32) | 11)
        self.assertEqual(ws.decode_vote(4 << 32, 4), (None, 0))
        self.assertEqual(ws.decode_vote((2 << 32) | 4, 4), (2, 4))
        self.assertEqual(ws.chunks(0), [(0, 0)])
        self.assertEqual(ws.chunks(ws.CHUNK_BYTES + 1), [(0, ws.CHUNK_BYTES), (ws.CHUNK_BYTES, 1)])
        self.assertEqual(ws.CHUNK_BYTES, 4 << 20)
        # The constants are Wharf's (src/replicas/rank_protocol.h), where the tree has it.
        header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "replicas",
                              "rank_protocol.h")
        if os.path.exists(header):
            text = open(header).read()
            self.assertIn("kRankChunkBytes = 4ull << 20;", text)
            self.assertIn("kRankGroupPieces = %d;" % ws.GROUP_PIECES, text)

    def test_group_ids(self):
        gid = ws.make_group_id("host")
        self.assertEqual(len(gid), 256)
        self.assertTrue(gid.startswith(b"WHARFHS1"))
        with self.assertRaises(ws.WharfGroupError):
            ws.WharfSender(b"\0" * 255, 2)

    def test_every_torch_dtype_name_maps_to_the_header_value(self):
        header = open(os.path.join(ROOT, "include", "wharf", "wharf.h")).read()
        wharf_names = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64",
                       "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2", "int8": "I8", "uint8": "U8",
                       "int16": "I16", "int32": "I32", "int64": "I64", "bool": "BOOL", "uint16": "U16",
                       "uint32": "U32", "uint64": "U64", "complex64": "C64", "float8_e8m0fnu": "F8_E8M0",
                       "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2fnuz": "F8_E5M2FNUZ"}
        for torch_name, code in ws.WHARF_DTYPES.items():
            self.assertIn("WHARF_DTYPE_%s = %d," % (wharf_names[torch_name], code), header, torch_name)


# --- end to end over the host transport -----------------------------------------------

IN, HIDDEN, OUT, BATCH = 16, 8, 4, 2


def weights(seed):
    """A deterministic MLP (fc1 16 -> 8, fc2 8 -> 4) as float32 lists."""
    def v(n, k):
        return [math.sin(seed * 1.7 + 0.37 * (k * 101 + i)) * 0.5 for i in range(n)]
    return {"fc1.weight": v(HIDDEN * IN, 1), "fc1.bias": v(HIDDEN, 2), "fc2.weight": v(OUT * HIDDEN, 3),
            "fc2.bias": v(OUT, 4)}


SHAPES = {"fc1.weight": [HIDDEN, IN], "fc1.bias": [HIDDEN], "fc2.weight": [OUT, HIDDEN], "fc2.bias": [OUT]}


def f32(xs):
    return array.array("f", xs).tolist()  # rounded to float32, as the server holds them


def forward(w):
    w = {k: f32(x) for k, x in w.items()}
    ys = []
    for b in range(BATCH):
        x = f32([math.sin(0.1 * (b * IN + i)) for i in range(IN)])
        h = [max(0.0, w["fc1.bias"][j] + sum(w["fc1.weight"][j * IN + i] * x[i] for i in range(IN)))
             for j in range(HIDDEN)]
        ys += [w["fc2.bias"][o] + sum(w["fc2.weight"][o * HIDDEN + j] * h[j] for j in range(HIDDEN))
               for o in range(OUT)]
    return ys


def host_tensors(w, shapes=SHAPES):
    return {k: ("float32", shapes[k], array.array("f", x).tobytes()) for k, x in w.items()}


class HostEndToEnd(unittest.TestCase):
    def setUp(self):
        if not SERVER:
            self.skipTest("no --server given (ctest passes build/tests/wharf_sender_server)")

    def start(self, gid, rank, size, rounds):
        return subprocess.Popen([SERVER, "--host", "--id", gid.hex(), "--rank", str(rank), "--size", str(size),
                                 "--rounds", str(rounds), "--timeout-ms", "20000"],
                                stdout=subprocess.PIPE, text=True)

    def line(self, proc):
        text = proc.stdout.readline()
        self.assertTrue(text, "the server ended early (its stderr says why)")
        return json.loads(text)

    def check_served(self, got, w):
        self.assertNotIn("error", got)
        want = forward(w)
        for a, b in zip(got["y"], want):
            self.assertAlmostEqual(a, b, delta=1e-4 * max(1.0, abs(b)))

    def run_group(self, servers):
        gid = ws.make_group_id("host")
        size = servers + 1
        procs = [self.start(gid, r, size, 2) for r in range(1, size)]
        try:
            sender = ws.WharfSender(gid, size, timeout=20)
            w1, w2 = weights(1), weights(2)
            sender.push(host_tensors(w1))
            first = [self.line(p) for p in procs]
            for got in first:
                self.check_served(got, w1)
            # A push a server cannot stage (fc2.bias of the wrong shape): refused everywhere,
            # the sender told which rank, nothing changed, and the group stays usable.
            bad = dict(SHAPES, **{"fc2.bias": [OUT, 1]})
            with self.assertRaises(ws.WharfGroupError) as e:
                sender.push(host_tensors(w2, bad))
            self.assertEqual(e.exception.rank, 1)
            self.assertEqual(e.exception.code, 1)  # INVALID_ARGUMENT
            for p in procs:
                self.assertEqual(self.line(p)["error"], "INVALID_ARGUMENT")
            sender.push(host_tensors(w2))
            for p, before in zip(procs, first):
                got = self.line(p)
                self.check_served(got, w2)
                self.assertEqual(got["generation"], before["generation"] + 1)
            self.assertNotEqual(forward(w1), forward(w2))
            sender.close()
            for p in procs:
                self.assertEqual(p.wait(timeout=30), 0)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()

    def test_one_server(self):
        self.run_group(1)

    def test_two_servers(self):
        self.run_group(2)


if __name__ == "__main__":
    if "--server" in sys.argv:
        i = sys.argv.index("--server")
        SERVER = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    unittest.main()
