#!/usr/bin/env python3
# make-seeds.py — writes the seed corpora of the fuzz targets (corpus/frame,
# corpus/batch, corpus/handshake): well-formed frames of every kind, so the
# fuzzer starts from inputs that reach deep into the executor.  The layout
# matches fuzz_memnode.c's region (4 MiB, 64 KiB chunks, catalog of 8):
# tenant-b's tree is slot 0 with the chunk at 0x200000, tenant-a's slot 1
# with the chunk at 0x210000.  Run from anywhere; rewrites the corpora.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = 0x58494D44
HELLO, BATCH, RPC, AUTH = 1, 2, 3, 4
READ, WRITE, CAS, FAA, FOR, FMAX = 1, 2, 3, 4, 5, 6
NODE = 1 << 48
A_CHUNK, B_CHUNK = NODE | 0x210000, NODE | 0x200000
A_ENTRY, B_ENTRY = NODE | (8192 + 512), NODE | 8192
A_TREE, B_TREE = NODE | (2 << 20) | 1, NODE | (1 << 20)


def frame(typ, body, seq=1):
    body += b"\0" * (-len(body) % 8)
    return struct.pack("<IIHHIQ", MAGIC, 24 + len(body), typ, 0, 0, seq) + body


def hello(identity=b"", version=7, nonce=b"\x11" * 32):
    body = struct.pack("<IIQ", version, 0, 4242) + b"fuzz seed".ljust(32, b"\0")
    if version >= 3:
        body += identity.ljust(64, b"\0") + nonce
    return frame(HELLO, body)


def auth(mac=b"\xAA" * 32):
    return frame(AUTH, mac, 2)


def op(kind, addr, length=8, arg0=0, arg1=0, flags=0):
    return struct.pack("<BBxxIQQQ", kind, flags, length, addr, arg0, arg1)


def batch_body(ops, payload=b""):
    return struct.pack("<II", len(ops), 0) + b"".join(ops) + payload


def batch(ops, payload=b"", seq=3):
    return frame(BATCH, batch_body(ops, payload), seq)


def name(s):
    return struct.pack("<IIQII", 1, 0, 0, 0, 0) + s.ljust(104, b"\0")


def rpc(code, args=b"", seq=4):
    return frame(RPC, struct.pack("<II", code, 0) + args, seq)


U64 = lambda v: struct.pack("<Q", v)
RPCS = [
    rpc(1, U64(7)), rpc(9), rpc(8, struct.pack("<IIIIQ", 0, 64, 0, 0, 0)),
    rpc(5, name(b"new")), rpc(6, name(b"a")), rpc(6, name(b"b")),
    rpc(2, U64(A_TREE)), rpc(10, struct.pack("<QQ", A_TREE, 256)),
    rpc(11, struct.pack("<QQQ", A_TREE, A_CHUNK + 256, 256)), rpc(3, U64(A_CHUNK)),
    rpc(4, U64(A_TREE)), rpc(7, name(b"a")), rpc(7, name(b"b")), rpc(3, U64(B_CHUNK)),
    rpc(17, struct.pack("<II", 2, 0) + U64(0x1234) + U64(0x5678) + b"\0" * 8 * 28),
]
OPS = [
    (batch_body([op(READ, NODE | 0, 64)]), b""),
    (batch_body([op(WRITE, A_CHUNK + 64, 16)], b"\x42" * 16), b""),
    (batch_body([op(CAS, A_CHUNK, 8, 0, 1, 1), op(READ, A_CHUNK, 256), op(WRITE, A_CHUNK + 8, 8)], b"\x01" * 8), b""),
    (batch_body([op(FAA, A_CHUNK + 16, 8, 1), op(FOR, A_ENTRY + 8, 8, 2), op(FMAX, A_CHUNK + 24, 8, 9)]), b""),
    (batch_body([op(READ, B_CHUNK, 64)]), b""),
    (batch_body([op(WRITE, B_ENTRY, 8)], b"\x07" * 8), b""),
    (batch_body([op(CAS, NODE | 4096, 8, 0, 1)]), b""),
    (batch_body([op(READ, A_CHUNK + 0xFFC0, 128)]), b""),
]


def write(kind, n, data):
    d = os.path.join(HERE, "corpus", kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-%02d" % n), "wb") as f:
        f.write(data)


def main():
    # frame: first byte 0 = before the handshake, 1 = after
    seeds = [b"\0" + hello() + batch([op(READ, A_CHUNK, 64)]) + b"".join(RPCS),
             b"\0" + hello(version=2), b"\0" + hello() + hello(),
             b"\1" + b"".join(frame(BATCH, body, 3) for body, _ in OPS),
             b"\1" + b"".join(RPCS)]
    for i, s in enumerate(seeds):
        write("frame", i, s)
    for i, (body, _) in enumerate(OPS):
        write("batch", i, body)
    hs = [hello(b"tenant-a") + auth() + b"".join(frame(BATCH, body, 3) for body, _ in OPS) + b"".join(RPCS),
          hello(b"tenant-a") + auth(b"\x01" * 32) + batch([op(READ, A_CHUNK, 8)]),
          hello(b"tenant-b") + auth(), hello() + batch([op(READ, A_CHUNK, 8)]),
          auth(), hello(b"tenant-a") + rpc(9), hello(b"bad/identity") + auth(), hello(version=2)]
    for i, s in enumerate(hs):
        write("handshake", i, s)


main()
