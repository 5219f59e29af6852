# SPDX-License-Identifier: Apache-2.0
"""Push weights from a PyTorch trainer into Wharf servers: the trainer joins a Wharf replica
group as rank 0 (the source) and broadcasts a state dict straight from its GPU tensors.

Pure Python, no dependency beyond PyTorch (which ships NCCL: the nvidia-nccl wheel's
libnccl.so.2 is opened with ctypes, as vLLM's pynccl does). The bytes on the wire are the
group's own protocol, src/replicas/rank_protocol.h:

1. a 1 KiB header (code, count, total bytes, plan bytes, message);
2. the plan: per weight its byte count, wharf_dtype, shape and FQN;
3. each weight's bytes in plan order;
4. the vote: an all-reduce (minimum) of one uint64 per rank, which says whether every Wharf
   rank staged the update (then each publishes it) or which rank failed (nothing changed).

Every broadcast goes out in pieces of 4 MiB (CHUNK_BYTES), one ncclBroadcast of ncclInt8
from root 0 each, launched on torch.cuda.current_stream() so they are ordered after the
trainer's writes to the tensors. The weights' pieces (step 3) go in NCCL groups of
GROUP_PIECES consecutive pieces, counted across tensors, as every Wharf rank groups them. Forming the group, the sender takes part in the Wharf ranks'
declaration check with UINT64_MAX (the neutral value of the minimum); the servers check each
weight's name, dtype and shape against their own declarations when the plan arrives.

    import wharf_sender
    gid = wharf_sender.make_group_id()          # 256 bytes: hand them to every server
    sender = wharf_sender.WharfSender(gid, size=1 + num_servers)   # joins as rank 0
    sender.push(model.state_dict())             # every server serves the new weights on return

A second transport, "host", speaks the Unix-socket stand-in that Wharf's host backend uses
between processes of one machine (src/replicas/host_rank_transport.cpp), so the protocol can
be tested without a GPU; it takes host bytes (see push()).
"""

import ctypes
import glob
import os
import secrets
import select
import socket
import struct
import sys
import time

CHUNK_BYTES = 4 << 20  # kRankChunkBytes
GROUP_PIECES = 16  # kRankGroupPieces: step 3's pieces per NCCL group
HEADER_BYTES = 1024  # kRankHeaderBytes
ID_BYTES = 256  # wharf_replica_group_id
NCCL_ID_OFFSET = 128  # kRankIdNcclOffset
NCCL_MAGIC = b"WHARFNC1"
HOST_MAGIC = b"WHARFHS1"

# wharf_dtype values (include/wharf/wharf.h), by torch dtype name.
WHARF_DTYPES = {
    "float32": 0, "float16": 1, "bfloat16": 2, "float64": 3, "float8_e4m3fn": 4,
    "float8_e5m2": 5, "int8": 6, "uint8": 7, "int16": 8, "int32": 9, "int64": 10, "bool": 11,
    "uint16": 12, "uint32": 13, "uint64": 14, "complex64": 15, "float8_e8m0fnu": 16,
    "float8_e4m3fnuz": 17, "float8_e5m2fnuz": 18,
}
# wharf_code values, for messages.
CODE_NAMES = ["OK", "INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "OUT_OF_MEMORY",
              "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "BUSY", "UNSUPPORTED", "DEVICE_ERROR",
              "IO_ERROR", "DATA_CORRUPT", "INTERNAL", "CANCELLED"]
INVALID_ARGUMENT = 1


class WharfGroupError(RuntimeError):
    """An update that did not publish: `code` is the wharf_code, `rank` the failing rank."""

    def __init__(self, message, code=None, rank=None):
        super().__init__(message)
        self.code = code
        self.rank = rank


# --- the protocol (mirrors src/replicas/rank_protocol.h) ----------------------------------

def encode_plan(entries):
    """entries: (fqn, wharf dtype code, shape, nbytes) tuples -> the plan's bytes."""
    out = bytearray()
    for fqn, dtype, shape, nbytes in entries:
        name = fqn.encode("utf-8")
        out += struct.pack("<QII", nbytes, dtype, len(shape))
        for d in shape:
            out += struct.pack("<q", d)
        out += struct.pack("<I", len(name)) + name
        out += b"\0" * (-len(out) % 8)
    return bytes(out)


def encode_header(code=0, count=0, total_bytes=0, plan_bytes=0, text=""):
    msg = text.encode("utf-8")[: HEADER_BYTES - 24 - 1]
    head = struct.pack("<IIQQ", code, count, total_bytes, plan_bytes) + msg
    return head + b"\0" * (HEADER_BYTES - len(head))


def encode_vote(rank, size, code=0):
    return size << 32 if code == 0 else (rank << 32) | code


def decode_vote(decision, size):
    """(failed rank or None, code)."""
    rank = decision >> 32
    return (None, 0) if rank >= size else (rank, decision & 0xFFFFFFFF)


def chunks(nbytes):
    """The (offset, length) pieces one broadcast of nbytes travels in (one for 0 bytes)."""
    if nbytes == 0:
        return [(0, 0)]
    return [(off, min(CHUNK_BYTES, nbytes - off)) for off in range(0, nbytes, CHUNK_BYTES)]


def make_group_id(transport="nccl", nccl_library=None):
    """A fresh 256-byte Wharf group id (what wharf_replica_group_get_unique_id makes)."""
    if transport == "host":
        name = ("wharf-replica-group-py-%d-%s" % (os.getpid(), secrets.token_hex(8))).encode()
        return HOST_MAGIC + name + b"\0" * (ID_BYTES - len(HOST_MAGIC) - len(name))
    nccl = _Nccl(nccl_library)
    uid = nccl.unique_id()
    gid = bytearray(ID_BYTES)
    gid[: len(NCCL_MAGIC)] = NCCL_MAGIC
    gid[NCCL_ID_OFFSET:] = uid
    return bytes(gid)


# --- NCCL through ctypes ----------------------------------------------------------------

class _NcclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


def find_nccl(explicit=None):
    """libnccl.so.2: WHARF_NCCL_LIBRARY, else the nvidia-nccl wheel PyTorch installs, else the
    loader's search path."""
    if explicit:
        return explicit
    if os.environ.get("WHARF_NCCL_LIBRARY"):
        return os.environ["WHARF_NCCL_LIBRARY"]
    for base in sys.path:
        hits = glob.glob(os.path.join(base, "nvidia", "nccl", "lib", "libnccl.so*"))
        if hits:
            return sorted(hits)[0]
    return "libnccl.so.2"


class _Nccl:
    kInt8, kUint64, kMin, kInProgress = 0, 5, 3, 7

    def __init__(self, path=None):
        self.path = find_nccl(path)
        # As Wharf: NVLink multicast off (NCCL reads its environment once, at first use).
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
        lib = ctypes.CDLL(self.path)
        self.lib = lib
        lib.ncclGetErrorString.restype = ctypes.c_char_p
        lib.ncclGetErrorString.argtypes = [ctypes.c_int]
        lib.ncclGetUniqueId.argtypes = [ctypes.POINTER(_NcclUniqueId)]
        lib.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, _NcclUniqueId, ctypes.c_int]
        lib.ncclBroadcast.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                      ctypes.c_void_p, ctypes.c_void_p]
        lib.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                      ctypes.c_void_p, ctypes.c_void_p]
        lib.ncclGroupStart.argtypes = []
        lib.ncclGroupEnd.argtypes = []
        lib.ncclCommGetAsyncError.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        lib.ncclCommAbort.argtypes = [ctypes.c_void_p]
        lib.ncclCommDestroy.argtypes = [ctypes.c_void_p]

    def check(self, result, what):
        if result not in (0, self.kInProgress):
            raise WharfGroupError("%s failed: %s (ncclResult_t %d, %s)" % (
                what, self.lib.ncclGetErrorString(result).decode(), result, self.path), code=9)

    def unique_id(self):
        uid = _NcclUniqueId()
        self.check(self.lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        return bytes(bytearray(uid.internal))


class _NcclTransport:
    """Rank 0 of the group's NCCL communicator, on the current CUDA device and stream."""

    def __init__(self, group_id, size, timeout, nccl_library):
        import torch  # only this transport needs it

        self.torch = torch
        if group_id[: len(NCCL_MAGIC)] != NCCL_MAGIC:
            raise WharfGroupError("the group id was not made for the NCCL transport (CUDA servers)", INVALID_ARGUMENT)
        self.nccl = _Nccl(nccl_library)
        self.size = size
        self.timeout = timeout
        self.device = torch.device("cuda", torch.cuda.current_device())
        uid = _NcclUniqueId()
        ctypes.memmove(ctypes.addressof(uid), group_id[NCCL_ID_OFFSET:], 128)
        self.comm = ctypes.c_void_p()
        # Blocking: returns once every Wharf rank joined (their own init is bounded by their timeout).
        self.nccl.check(self.nccl.lib.ncclCommInitRank(ctypes.byref(self.comm), size, uid, 0), "ncclCommInitRank")
        self.scratch = torch.empty(CHUNK_BYTES, dtype=torch.uint8, device=self.device)
        self.group_pieces = 0  # pieces in step 3's open NCCL group

    def _stream(self):
        return ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)

    def _wait(self, what):
        # The stream's work, watching NCCL for a failed peer, within the timeout.
        stream = self.torch.cuda.current_stream()
        deadline = time.monotonic() + self.timeout
        err = ctypes.c_int(0)
        while not stream.query():
            self.nccl.lib.ncclCommGetAsyncError(self.comm, ctypes.byref(err))
            if err.value not in (0, self.nccl.kInProgress):
                self.abort()
                raise WharfGroupError("NCCL %s: %s (a Wharf rank failed)" % (
                    what, self.nccl.lib.ncclGetErrorString(err.value).decode()), code=10)
            if time.monotonic() > deadline:
                self.abort()
                raise WharfGroupError("NCCL %s did not complete within %.1f s (a Wharf rank died or stopped)" % (
                    what, self.timeout), code=10)
            time.sleep(0.0002)

    def _bcast(self, ptr, nbytes, grouped=False):
        for off, n in chunks(nbytes):
            if not n:
                continue
            if grouped and self.group_pieces == 0:
                self.nccl.check(self.nccl.lib.ncclGroupStart(), "ncclGroupStart")
            self.nccl.check(self.nccl.lib.ncclBroadcast(ctypes.c_void_p(ptr + off), ctypes.c_void_p(ptr + off),
                                                        n, self.nccl.kInt8, 0, self.comm, self._stream()),
                            "ncclBroadcast")
            if grouped:
                self.group_pieces += 1
                if self.group_pieces == GROUP_PIECES:
                    self._close_group()

    def _close_group(self):
        if self.group_pieces:
            self.group_pieces = 0
            self.nccl.check(self.nccl.lib.ncclGroupEnd(), "ncclGroupEnd")

    def broadcast_bytes(self, data):
        """Host bytes (header, plan): through a device copy."""
        t = self.torch.frombuffer(bytearray(data), dtype=self.torch.uint8).to(self.device)
        self._bcast(t.data_ptr(), len(data))
        self._wait("broadcast")

    def broadcast_tensor(self, t):
        """A CUDA tensor in place (contiguous; ordered after the current stream's work)."""
        self._bcast(t.data_ptr(), t.numel() * t.element_size(), grouped=True)

    def finish_tensors(self):
        self._close_group()
        self._wait("broadcast")

    def vote(self, mine):
        v = struct.unpack("<q", struct.pack("<Q", mine))[0]
        t = self.torch.tensor([v], dtype=self.torch.int64, device=self.device)
        self.nccl.check(self.nccl.lib.ncclAllReduce(ctypes.c_void_p(t.data_ptr()), ctypes.c_void_p(t.data_ptr()), 1,
                                                    self.nccl.kUint64, self.nccl.kMin, self.comm, self._stream()),
                        "ncclAllReduce")
        self._wait("vote")
        return struct.unpack("<Q", struct.pack("<q", int(t.item())))[0]

    def abort(self, rank=0, why=""):
        if self.group_pieces:  # NCCL's group depth is per thread: never leave one open
            self.group_pieces = 0
            self.nccl.lib.ncclGroupEnd()
        if self.comm:
            self.nccl.lib.ncclCommAbort(self.comm)
            self.comm = ctypes.c_void_p()

    def close(self):
        if self.comm:
            self.nccl.lib.ncclCommDestroy(self.comm)
            self.comm = ctypes.c_void_p()


# --- the host transport (Wharf's Unix-socket stand-in for NCCL) -------------------------

_FRAME = struct.Struct("<IIIIQ")
_FRAME_MAGIC = 0x57524B31
_HELLO, _WELCOME, _DATA, _ABORT, _VOTE, _RESULT = 1, 2, 3, 4, 5, 6


class _HostTransport:
    """Rank 0 of a host-backend group: listens on the id's abstract socket, as Wharf's rank 0."""

    def __init__(self, group_id, size, timeout):
        if group_id[: len(HOST_MAGIC)] != HOST_MAGIC:
            raise WharfGroupError("the group id was not made for the host transport", INVALID_ARGUMENT)
        name = group_id[len(HOST_MAGIC):NCCL_ID_OFFSET].split(b"\0")[0]
        self.size = size
        self.timeout = timeout
        self.peers = [None] * size
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(b"\0" + name)
            listener.listen(size)
            deadline = time.monotonic() + timeout
            fingerprint = None
            while None in self.peers[1:]:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([listener], [], [], left)[0]:
                    missing = [r for r in range(1, size) if self.peers[r] is None]
                    self._refuse(10, size, "replica group: rank(s) %s of %d did not join within the timeout" % (
                        ", ".join(map(str, missing)), size))
                conn, _ = listener.accept()
                conn.settimeout(timeout)
                magic, kind, rank, their_size, fp = _FRAME.unpack(self._recv(conn, _FRAME.size))
                problem = None
                if magic != _FRAME_MAGIC or kind != _HELLO:
                    conn.close()
                    continue
                if their_size != size:
                    problem = "rank %d was created with size %d, rank 0 with size %d" % (rank, their_size, size)
                elif not 0 < rank < size or self.peers[rank] is not None:
                    problem = "rank %d joined twice, or is out of range" % rank
                elif fingerprint is not None and fp != fingerprint:
                    # The sender declares nothing: the Wharf ranks must agree among themselves.
                    problem = "rank %d's container is declared unlike the other Wharf ranks'" % rank
                if problem:
                    self._refuse(INVALID_ARGUMENT, rank, "replica group: " + problem, also=[conn])
                fingerprint = fp
                self.peers[rank] = conn
            for r in range(1, size):
                self.peers[r].sendall(_FRAME.pack(_FRAME_MAGIC, _WELCOME, 0, 0, 0))
        finally:
            listener.close()

    def _recv(self, conn, n):
        buf = bytearray()
        while len(buf) < n:
            got = conn.recv(n - len(buf))
            if not got:
                raise WharfGroupError("a Wharf rank closed its connection", code=10)
            buf += got
        return bytes(buf)

    def _refuse(self, code, rank, text, also=()):
        msg = text.encode()
        for conn in list(self.peers) + list(also):
            if conn is not None:
                try:
                    conn.sendall(_FRAME.pack(_FRAME_MAGIC, _WELCOME, rank, code, len(msg)) + msg)
                except OSError:
                    pass
                conn.close()
        self.peers = [None] * self.size
        raise WharfGroupError(text, code=code, rank=rank)

    def broadcast_bytes(self, data):
        data = memoryview(data).cast("B")
        for off, n in chunks(len(data)):
            frame = _FRAME.pack(_FRAME_MAGIC, _DATA, 0, 0, n)
            for r in range(1, self.size):
                try:
                    self.peers[r].sendall(frame)
                    self.peers[r].sendall(data[off:off + n])
                except OSError as e:
                    self.abort(r, str(e))
                    raise WharfGroupError("rank %d closed its connection: %s" % (r, e), code=10, rank=r)

    def broadcast_tensor(self, t):
        self.broadcast_bytes(t)

    def finish_tensors(self):
        pass

    def vote(self, mine):
        low = mine
        for r in range(1, self.size):
            try:
                magic, kind, rank, _, v = _FRAME.unpack(self._recv(self.peers[r], _FRAME.size))
            except (OSError, WharfGroupError) as e:
                self.abort(r, str(e))
                raise WharfGroupError("rank %d failed before its vote: %s" % (r, e), code=10, rank=r)
            if magic != _FRAME_MAGIC or kind != _VOTE or rank != r:
                self.abort(r, "out of step")
                raise WharfGroupError("rank %d sent an unexpected frame where its vote was due" % r, code=10, rank=r)
            low = min(low, v)
        for r in range(1, self.size):
            self.peers[r].sendall(_FRAME.pack(_FRAME_MAGIC, _RESULT, 0, 0, low))
        return low

    def abort(self, rank=0, why=""):
        msg = why.encode()[:4096]
        for r in range(1, self.size):
            conn = self.peers[r]
            if conn is None:
                continue
            if r != rank:
                try:
                    conn.settimeout(0.2)
                    conn.sendall(_FRAME.pack(_FRAME_MAGIC, _ABORT, rank, 0, len(msg)) + msg)
                except OSError:
                    pass
            conn.close()
            self.peers[r] = None

    def close(self):
        for conn in self.peers:
            if conn is not None:
                conn.close()
        self.peers = [None] * self.size


# --- the sender ---------------------------------------------------------------------------

def _describe(value):
    """(wharf dtype code, shape, nbytes, payload) of a torch tensor or a (dtype name, shape,
    bytes) tuple (host transport)."""
    if isinstance(value, tuple):
        dtype, shape, data = value
        return WHARF_DTYPES[dtype], list(shape), len(memoryview(data).cast("B")), data
    name = str(value.dtype).replace("torch.", "")
    if name not in WHARF_DTYPES:
        raise WharfGroupError("dtype %s has no wharf_dtype" % value.dtype, INVALID_ARGUMENT)
    return WHARF_DTYPES[name], list(value.shape), value.numel() * value.element_size(), value


class WharfSender:
    """Rank 0 (the source) of a Wharf replica group of `size` ranks (itself included)."""

    def __init__(self, group_id, size, timeout=30.0, transport=None, nccl_library=None):
        group_id = bytes(group_id)
        if len(group_id) != ID_BYTES:
            raise WharfGroupError("a Wharf group id has %d bytes, not %d" % (ID_BYTES, len(group_id)), INVALID_ARGUMENT)
        if transport is None:
            transport = "host" if group_id.startswith(HOST_MAGIC) else "nccl"
        self.size = size
        if transport == "host":
            self.t = _HostTransport(group_id, size, timeout)
        else:
            self.t = _NcclTransport(group_id, size, timeout, nccl_library)
            # The Wharf ranks compare their declarations: min f and min ~f. The neutral value.
            self.t.vote(0xFFFFFFFFFFFFFFFF)
            self.t.vote(0xFFFFFFFFFFFFFFFF)
        self.transport = transport

    def push(self, tensors):
        """Broadcasts `tensors` (FQN -> CUDA tensor, e.g. a state_dict(); for the host
        transport, FQN -> (wharf dtype name, shape, bytes)) as one update: on return every
        Wharf rank serves them. Raises WharfGroupError when a rank could not stage them
        (nothing changed on any rank; the group stays usable) or a rank died (the group is
        aborted)."""
        described = []
        for fqn, value in tensors.items():
            if self.transport == "nccl":
                if not value.is_cuda:
                    raise WharfGroupError("%s is not a CUDA tensor" % fqn, INVALID_ARGUMENT)
                value = value.detach().contiguous()
            dtype, shape, nbytes, payload = _describe(value)
            described.append((fqn, dtype, shape, nbytes, payload))
        plan = encode_plan([(f, d, s, n) for f, d, s, n, _ in described])
        total = sum(n for _, _, _, n, _ in described)
        self.t.broadcast_bytes(encode_header(0, len(described), total, len(plan)))
        if described:
            self.t.broadcast_bytes(plan)
        for _, _, _, _, payload in described:
            self.t.broadcast_tensor(payload)
        self.t.finish_tensors()
        decision = self.t.vote(encode_vote(0, self.size))
        rank, code = decode_vote(decision, self.size)
        if rank is not None:
            raise WharfGroupError("Wharf rank %d could not stage the update (%s; its own error says why); nothing "
                                  "changed on any rank" % (rank, CODE_NAMES[code] if code < len(CODE_NAMES) else code),
                                  code=code, rank=rank)

    def refuse(self, code, text):
        """Ends an update before any weight is sent: every Wharf rank returns `code` and `text`."""
        self.t.broadcast_bytes(encode_header(code, 0, 0, 0, text))

    def close(self):
        self.t.close()
