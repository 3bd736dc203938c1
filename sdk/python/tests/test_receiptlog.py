"""Issue 32: the receipt log's proofs, as the real binary answers them, verify offline with
agentmemory.receiptlog (standard library only), and tampered ones are refused."""

import copy
import base64
import hashlib
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import DevServer, http_json  # noqa: E402

from agentmemory import receiptlog  # noqa: E402


def flip(b64: str) -> str:
    raw = bytearray(base64.b64decode(b64))
    raw[0] ^= 1
    return base64.b64encode(bytes(raw)).decode()


class ReceiptLogTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = DevServer()
        cls.server.start()
        cls.key = cls.server.create_space("receiptlog")
        cls.get = staticmethod(lambda path: http_json("GET", cls.server.url + path, cls.key))
        cls.mint(3)
        cls.keys = receiptlog.public_keys(cls.get("/v1/signing-keys"))
        cls.old = cls.checkpoint_after(0)
        cls.ids = [r["id"] for r in cls.get("/v1/receipts?limit=1000")["receipts"]]
        cls.proofs = [cls.proof(i) for i in cls.ids]
        cls.mint(2)
        cls.new = cls.checkpoint_after(cls.old["size"])
        cls.cons = cls.get("/v1/receipts/consistency?from=%d" % cls.old["size"])

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    @classmethod
    def mint(cls, n):
        for _ in range(n):
            http_json("POST", cls.server.url + "/v1/keys", cls.key, {"kind": "person", "name": "p%d" % time.time_ns(), "roles": ["admin"]})

    @classmethod
    def checkpoint_after(cls, size):
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                cp = cls.get("/v1/receipts/checkpoint")
                if cp["size"] > size:
                    return cp
            except Exception:  # 404 until the first checkpoint
                pass
            time.sleep(0.2)
        raise AssertionError("no checkpoint past size %d in 20 s" % size)

    @classmethod
    def proof(cls, rid):
        deadline = time.time() + 20
        while time.time() < deadline:
            p = cls.get("/v1/receipts/%s/proof" % rid)
            if p.get("log"):
                return p
            time.sleep(0.2)
        raise AssertionError("no log proof for %s in 20 s" % rid)

    def test_inclusion_proofs_verify(self):
        self.assertGreaterEqual(len(self.proofs), 3)
        for p in self.proofs:
            receiptlog.verify_receipt(p, self.keys)

    def test_tampered_inclusion_refused(self):
        p = max(self.proofs, key=lambda p: len(p["log"]["hashes"]))
        self.assertTrue(p["log"]["hashes"], "a proof with hashes")
        cases = {}
        c = copy.deepcopy(p)
        c["leaf_hash"] = hashlib.sha256(b"other").hexdigest()
        cases["another leaf"] = c
        c = copy.deepcopy(p)
        c["log"]["index"] = (c["log"]["index"] + 1) % c["log"]["checkpoint"]["size"]
        cases["another index"] = c
        c = copy.deepcopy(p)
        c["log"]["hashes"][0] = flip(c["log"]["hashes"][0])
        cases["a changed proof hash"] = c
        c = copy.deepcopy(p)
        c["log"]["hashes"] = c["log"]["hashes"][:-1]
        cases["a hash left out"] = c
        c = copy.deepcopy(p)
        c["log"]["checkpoint"]["hash"] = flip(c["log"]["checkpoint"]["hash"])
        cases["a root the note does not state"] = c
        c = copy.deepcopy(p)
        c["log"]["checkpoint"]["note"] = c["log"]["checkpoint"]["note"].replace("\n%d\n" % c["log"]["checkpoint"]["size"], "\n%d\n" % (c["log"]["checkpoint"]["size"] + 1), 1)
        c["log"]["checkpoint"]["size"] += 1
        cases["an edited note"] = c
        for name, c in cases.items():
            with self.subTest(name):
                with self.assertRaises(receiptlog.ProofError):
                    receiptlog.verify_receipt(c, self.keys)
        other = receiptlog.public_keys([base64.b64encode(hashlib.sha256(b"k").digest()).decode()])
        with self.assertRaises(receiptlog.ProofError):
            receiptlog.verify_receipt(p, other)

    def test_consistency_verifies(self):
        self.assertGreater(self.new["size"], self.old["size"])
        cons = self.get("/v1/receipts/consistency?from=%d&to=%d" % (self.old["size"], self.new["size"]))
        receiptlog.verify_consistency(self.old, self.new, cons, self.keys)
        receiptlog.verify_consistency(self.new, self.old, cons, self.keys)
        receiptlog.verify_consistency(self.old, self.old, cons, self.keys)

    def test_fork_refused(self):
        cons = self.get("/v1/receipts/consistency?from=%d&to=%d" % (self.old["size"], self.new["size"]))
        bad = copy.deepcopy(cons)
        bad["hashes"][0] = flip(bad["hashes"][0])
        with self.assertRaises(receiptlog.ForkError):
            receiptlog.verify_consistency(self.old, self.new, bad, self.keys)
        forged = dict(self.old, hash=flip(self.old["hash"]))
        with self.assertRaises(receiptlog.ProofError):
            receiptlog.verify_consistency(forged, self.new, cons, self.keys)


class Ed25519Test(unittest.TestCase):
    def test_rfc8032_vector(self):
        # RFC 8032 §7.1, TEST 2.
        pub = bytes.fromhex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
        sig = bytes.fromhex("92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
                            "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00")
        self.assertTrue(receiptlog._ed25519_verify(pub, b"\x72", sig))
        self.assertFalse(receiptlog._ed25519_verify(pub, b"\x73", sig))
        self.assertFalse(receiptlog._ed25519_verify(pub, b"\x72", sig[:63] + bytes([sig[63] ^ 1])))


if __name__ == "__main__":
    unittest.main()
