"""Offline verification of the receipt log's answers (issue 32), standard library only.

What ``GET /v1/receipts/{id}/proof``, ``GET /v1/receipts/checkpoint`` and
``GET /v1/receipts/consistency`` answer is checked here without the service, as the Go SDK's
``sdk/receiptlog`` and ``agentmemory receipts verify-proof`` check it:

- a checkpoint is a signed note (golang.org/x/mod/sumdb/note): the text of
  ``tlog.FormatTree`` ("go.sum database tree", the size, the root hash in base64, each on
  its line), a blank line, and signature lines ``— agentmemory-receipts <base64>`` whose
  bytes are a 4-byte key hash and a 64-byte Ed25519 signature of the text;
- the tree is RFC 6962's (leaf hashes as the proof gives them, node hash
  SHA-256(0x01 || left || right)), proofs as golang.org/x/mod/sumdb/tlog makes them.

Ed25519 is not in Python's standard library: ``_ed25519_verify`` is RFC 8032's verification
(section 5.1.7) in pure Python, slow (a few milliseconds a signature) and not constant-time,
which verification of public data does not need.

Every check raises :class:`ProofError` (:class:`ForkError` for two checkpoints that cannot
both hold) and returns None when it passes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any, Iterable, List, Mapping, Sequence

CHECKPOINT_KEY_NAME = "agentmemory-receipts"
"""The key name the receipt log's checkpoints are signed under."""

_TREE_PREFIX = "go.sum database tree\n"


class ProofError(Exception):
    """A proof, a checkpoint or its signature does not verify."""


class ForkError(ProofError):
    """Two signed checkpoints of the receipt log that cannot both hold (the log was rewritten)."""


# --- Ed25519 (RFC 8032 §5.1), verification only -------------------------------------------

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _add(a, b):
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    aa = (y1 - x1) * (y2 - x2) % _P
    bb = (y1 + x1) * (y2 + x2) % _P
    cc = 2 * t1 * t2 * _D % _P
    dd = 2 * z1 * z2 % _P
    e, f, g, h = bb - aa, dd - cc, dd + cc, bb + aa
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _mul(s, pt):
    q = (0, 1, 1, 0)
    while s > 0:
        if s & 1:
            q = _add(q, pt)
        pt = _add(pt, pt)
        s >>= 1
    return q


def _equal(a, b):
    x1, y1, z1, _ = a
    x2, y2, z2, _ = b
    return (x1 * z2 - x2 * z1) % _P == 0 and (y1 * z2 - y2 * z1) % _P == 0


def _recover_x(y, sign):
    if y >= _P:
        return None
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P)
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P != 0:
        x = x * _SQRT_M1 % _P
    if (x * x - x2) % _P != 0:
        return None
    if (x & 1) != sign:
        x = _P - x
    return x


def _decompress(s: bytes):
    if len(s) != 32:
        return None
    y = int.from_bytes(s, "little")
    sign = y >> 255
    y &= (1 << 255) - 1
    x = _recover_x(y, sign)
    if x is None:
        return None
    return (x, y, 1, x * y % _P)


_G = (_recover_x(4 * pow(5, _P - 2, _P) % _P, 0), 4 * pow(5, _P - 2, _P) % _P, 1, 0)
_G = (_G[0], _G[1], 1, _G[0] * _G[1] % _P)


def _ed25519_verify(public: bytes, msg: bytes, sig: bytes) -> bool:
    """True when sig (64 bytes) is public's (32 bytes) Ed25519 signature of msg (RFC 8032)."""
    if len(public) != 32 or len(sig) != 64:
        return False
    a = _decompress(public)
    r = _decompress(sig[:32])
    if a is None or r is None:
        return False
    s = int.from_bytes(sig[32:], "little")
    if s >= _L:
        return False
    h = int.from_bytes(hashlib.sha512(sig[:32] + public + msg).digest(), "little") % _L
    return _equal(_mul(s, _G), _add(r, _mul(h, a)))


# --- notes and checkpoints ---------------------------------------------------------------


def _key_hash(name: str, public: bytes) -> bytes:
    """The 4-byte key hash of sumdb/note: SHA-256(name, "\\n", 0x01 (Ed25519), key)[:4]."""
    return hashlib.sha256(name.encode() + b"\n" + b"\x01" + public).digest()[:4]


def public_keys(signing_keys: Any) -> List[bytes]:
    """The 32-byte Ed25519 keys of ``GET /v1/signing-keys``'s answer (``{"keys": [...]}``, a
    list of its entries, or a list of base64 strings). Raises ProofError on one that is not."""
    entries = signing_keys.get("keys", []) if isinstance(signing_keys, Mapping) else signing_keys
    out = []
    for e in entries:
        text = e.get("public_key", "") if isinstance(e, Mapping) else e
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raw = b""
        if len(raw) != 32:
            raise ProofError("%r is not an Ed25519 public key in base64" % (text,))
        out.append(raw)
    return out


def _open_note(note: str, keys: Sequence[bytes]) -> str:
    """The text of note when one of its signature lines verifies under one of keys."""
    i = note.find("\n\n")
    if i < 0 or not note.endswith("\n"):
        raise ProofError("the checkpoint's note is malformed")
    text, sigs = note[: i + 1], note[i + 2 :]
    hashes = {_key_hash(CHECKPOINT_KEY_NAME, k): k for k in keys}
    for line in sigs.splitlines():
        prefix = "\u2014 " + CHECKPOINT_KEY_NAME + " "
        if not line.startswith(prefix):
            continue
        try:
            raw = base64.b64decode(line[len(prefix) :], validate=True)
        except (binascii.Error, ValueError):
            continue
        key = hashes.get(raw[:4])
        if key is not None and len(raw) == 68 and _ed25519_verify(key, text.encode(), raw[4:]):
            return text
    raise ProofError("the checkpoint's note is not signed by any of the keys given")


def _hash(value: Any, what: str) -> bytes:
    """A 32-byte hash from its base64 text (as the API's JSON has it) or bytes."""
    try:
        raw = value if isinstance(value, bytes) else base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raw = b""
    if len(raw) != 32:
        raise ProofError("%s is not a 32-byte hash in base64" % what)
    return raw


def open_checkpoint(checkpoint: Mapping[str, Any], keys: Sequence[bytes]) -> None:
    """Checks that checkpoint's note (``{"size", "hash", "note", "at"}``) is signed by one of
    keys (public_keys) and states its size and root hash."""
    text = _open_note(str(checkpoint.get("note", "")), keys)
    lines = text[len(_TREE_PREFIX) :].split("\n")
    if not text.startswith(_TREE_PREFIX) or len(lines) != 3 or lines[2] != "":
        raise ProofError("the checkpoint's note is not a tree head")
    size, root = lines[0], _hash(lines[1], "the note's root")
    if not size.isdigit() or int(size) != checkpoint.get("size") or root != _hash(checkpoint.get("hash"), "the checkpoint's hash"):
        raise ProofError("the checkpoint's note states another tree")


# --- RFC 6962 trees as golang.org/x/mod/sumdb/tlog proves them ------------------------------


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _maxpow2(n: int) -> int:
    """The largest power of 2 less than n (n > 1)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def _run_record(p: List[bytes], lo: int, hi: int, n: int, leaf: bytes) -> bytes:
    if lo + 1 == hi:
        if p:
            raise ProofError("the receipt is not in the checkpoint's tree")
        return leaf
    if not p:
        raise ProofError("the receipt is not in the checkpoint's tree")
    k = _maxpow2(hi - lo)
    if n < lo + k:
        return _node(_run_record(p[:-1], lo, lo + k, n, leaf), p[-1])
    return _node(p[-1], _run_record(p[:-1], lo + k, hi, n, leaf))


def _run_tree(p: List[bytes], lo: int, hi: int, n: int, old: bytes):
    if n == hi:
        if lo == 0:
            if p:
                raise ForkError("the consistency proof does not verify")
            return old, old
        if len(p) != 1:
            raise ForkError("the consistency proof does not verify")
        return p[0], p[0]
    if not p:
        raise ForkError("the consistency proof does not verify")
    k = _maxpow2(hi - lo)
    if n <= lo + k:
        oh, th = _run_tree(p[:-1], lo, lo + k, n, old)
        return oh, _node(th, p[-1])
    oh, th = _run_tree(p[:-1], lo + k, hi, n, old)
    return _node(p[-1], oh), _node(p[-1], th)


def _hashes(values: Iterable[Any]) -> List[bytes]:
    return [_hash(v, "a proof hash") for v in values]


def verify_receipt(proof: Mapping[str, Any], keys: Sequence[bytes]) -> None:
    """Checks offline that proof (``GET /v1/receipts/{id}/proof``'s answer) puts its leaf hash
    (``leaf_hash``, hex) at ``log.index`` of the tree of ``log.checkpoint``, and that the
    checkpoint is signed by one of keys. The leaf hash is taken as the proof gives it:
    recomputing it from the receipt (RFC 8785 canonical JSON) is what
    ``agentmemory receipts verify-proof`` adds."""
    log = proof.get("log")
    if not log:
        raise ProofError("the proof has no log part yet: ask again in a few seconds")
    cp = log["checkpoint"]
    open_checkpoint(cp, keys)
    try:
        leaf = bytes.fromhex(str(proof.get("leaf_hash", "")))
    except ValueError:
        leaf = b""
    if len(leaf) != 32:
        raise ProofError("the leaf hash is not a SHA-256 hash in hex")
    size, index = cp["size"], log["index"]
    if not (isinstance(size, int) and isinstance(index, int) and 0 <= index < size):
        raise ProofError("the receipt is not in the checkpoint's tree")
    if _run_record(_hashes(log.get("hashes") or []), 0, size, index, leaf) != _hash(cp["hash"], "the checkpoint's hash"):
        raise ProofError("the receipt is not in the checkpoint's tree")


def verify_consistency(older: Mapping[str, Any], newer: Mapping[str, Any], consistency: Mapping[str, Any],
                       keys: Sequence[bytes]) -> None:
    """Checks offline that newer extends older (a checkpoint kept earlier; either order)
    through consistency (``GET /v1/receipts/consistency``'s answer), both signed by one of
    keys. Raises ForkError when they cannot both hold."""
    open_checkpoint(older, keys)
    open_checkpoint(newer, keys)
    if older["size"] > newer["size"]:
        older, newer = newer, older
    old_root, new_root = _hash(older["hash"], "a checkpoint's hash"), _hash(newer["hash"], "a checkpoint's hash")
    if older["size"] == newer["size"]:
        if old_root != new_root:
            raise ForkError("two trees of size %d" % older["size"])
        return
    got_from, got_to = consistency.get("from", {}).get("size"), consistency.get("to", {}).get("size")
    if got_from != older["size"] or got_to != newer["size"]:
        raise ProofError("the consistency proof is from %s to %s, not %d to %d" % (got_from, got_to, older["size"], newer["size"]))
    if older["size"] < 1:
        raise ProofError("a tree of size 0 has no consistency proof")
    oh, th = _run_tree(_hashes(consistency.get("hashes") or []), 0, newer["size"], older["size"], old_root)
    if oh != old_root or th != new_root:
        raise ForkError("the consistency proof does not verify")
