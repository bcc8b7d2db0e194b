"""A Merkle tree over the event log, as Certificate Transparency builds it.

The tree is RFC 6962's (RFC 9162, section 2.1): a leaf's hash is
SHA-256(0x00 || leaf data), an inner node's SHA-256(0x01 || left || right),
and a tree of n leaves splits at the largest power of two below n. Built
bottom up, a level pairs its nodes left to right and carries an odd last
node up unchanged, which gives the same root.

Level j of the tree holds the roots of the aligned chunks of 2**j leaves
(the last one possibly partial): a seal keeps a few of them so that a
mismatch can be narrowed to a range of positions.

Levels are kept as `bytes` of concatenated 32-byte digests, so that a tree
over a million leaves is a few tens of megabytes, not millions of objects.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from domain.record.hashing import canonical_json

DIGEST_SIZE = 32
_LEAF = b"\x00"
_NODE = b"\x01"
_topics: dict[str, str] = {}  # topic -> its JSON text


def leaf_data(position: int, aggregate_id: str, version: int, topic: str, state: bytes) -> bytes:
    """What a leaf commits to: one event as stored, at its place in the log.

    The canonical JSON of `[position, aggregate id, version, topic, SHA-256 of
    the stored state]`. The stored state is hashed as its bytes, so the leaf
    covers every field of the record, hashed or not by the thread's chain
    (timestamp, class_version, the chain's own hashes).
    """
    digest = hashlib.sha256(state).hexdigest()
    if aggregate_id.isascii() and aggregate_id.isalnum():  # hex: nothing to escape
        aggregate = f'"{aggregate_id}"'
    else:
        aggregate = canonical_json(aggregate_id)
    name = _topics.get(topic)
    if name is None:
        name = _topics[topic] = canonical_json(topic)
        if len(_topics) > 10_000:
            _topics.clear()
    return f'[{position},{aggregate},{version},{name},"{digest}"]'.encode()


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(_LEAF + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(_NODE + left + right).digest()


def _next_level(level: bytes) -> bytes:
    sha = hashlib.sha256
    step = 2 * DIGEST_SIZE
    size = len(level)
    whole = size - size % step
    parts = [sha(_NODE + level[i : i + step]).digest() for i in range(0, whole, step)]
    if whole != size:
        parts.append(level[whole:])
    return b"".join(parts)


class MerkleTree:
    """A whole tree over leaf hashes (concatenated 32-byte digests), every level kept."""

    def __init__(self, leaves: bytes) -> None:
        if len(leaves) % DIGEST_SIZE:
            msg = "leaf hashes must be 32 bytes each"
            raise ValueError(msg)
        self.levels = [leaves]
        while len(self.levels[-1]) > DIGEST_SIZE:
            self.levels.append(_next_level(self.levels[-1]))

    @property
    def size(self) -> int:
        return len(self.levels[0]) // DIGEST_SIZE

    @property
    def root(self) -> bytes:
        """The tree's root; the hash of no data for an empty tree, as RFC 6962 says."""
        if not self.size:
            return hashlib.sha256(b"").digest()
        return self.levels[-1]

    def level(self, height: int) -> list[bytes]:
        """The nodes at `height` (0: the leaves): the roots of chunks of 2**height leaves."""
        if not self.size:
            return []
        height = min(height, len(self.levels) - 1)
        nodes = self.levels[height]
        return [nodes[i : i + DIGEST_SIZE] for i in range(0, len(nodes), DIGEST_SIZE)]

    def inclusion_proof(self, index: int) -> list[bytes]:
        """The audit path of leaf `index`: its siblings, from the leaf up."""
        if not 0 <= index < self.size:
            msg = f"leaf {index} is not in a tree of {self.size}"
            raise IndexError(msg)
        path = []
        for nodes in self.levels[:-1]:
            count = len(nodes) // DIGEST_SIZE
            sibling = index ^ 1
            if sibling < count:
                path.append(nodes[sibling * DIGEST_SIZE : (sibling + 1) * DIGEST_SIZE])
            index //= 2
        return path


def chunk_height(size: int, most: int) -> int:
    """The lowest level with at most `most` nodes in a tree of `size` leaves."""
    height = 0
    while (size + (1 << height) - 1) >> height > most:
        height += 1
    return height


def root_of(leaves: Sequence[bytes]) -> bytes:
    return MerkleTree(b"".join(leaves)).root


def verify_inclusion(
    leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes
) -> bool:
    """Whether `path` proves leaf hash `leaf` is leaf `index` of the tree of `size` with `root`.

    RFC 9162, section 2.1.3.2.
    """
    if not 0 <= index < size:
        return False
    fn, sn = index, size - 1
    node = leaf
    for sibling in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            node = node_hash(sibling, node)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            node = node_hash(node, sibling)
        fn >>= 1
        sn >>= 1
    return sn == 0 and node == root
