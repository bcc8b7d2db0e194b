"""The Merkle tree is RFC 6962's: its root, its levels, and its inclusion proofs."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.integrity.merkle import (
    MerkleTree,
    chunk_height,
    leaf_data,
    leaf_hash,
    node_hash,
    verify_inclusion,
)
from domain.record.hashing import canonical_json


def rfc6962_root(leaves: list[bytes]) -> bytes:
    """MTH(D[n]) exactly as RFC 6962 section 2.1 defines it, recursively."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    split = 1
    while split * 2 < len(leaves):
        split *= 2
    return node_hash(rfc6962_root(leaves[:split]), rfc6962_root(leaves[split:]))


def leaves_of(count: int) -> list[bytes]:
    return [leaf_hash(str(n).encode()) for n in range(count)]


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 100])
def test_the_root_is_the_rfc_6962_tree_hash(size):
    # Given
    leaves = leaves_of(size)

    # When
    tree = MerkleTree(b"".join(leaves))

    # Then
    assert tree.root == rfc6962_root(leaves)
    assert tree.size == size


@given(st.integers(1, 70), st.data())
def test_every_leaf_has_a_proof_that_verifies_and_proves_nothing_else(size, data):
    # Given
    leaves = leaves_of(size)
    tree = MerkleTree(b"".join(leaves))
    index = data.draw(st.integers(0, size - 1))

    # When
    proof = tree.inclusion_proof(index)

    # Then
    assert verify_inclusion(leaves[index], index, size, proof, tree.root)
    assert not verify_inclusion(leaf_hash(b"forged"), index, size, proof, tree.root)
    if size > 1:
        other = (index + 1) % size
        assert not verify_inclusion(leaves[index], other, size, proof, tree.root)


def test_a_level_holds_the_roots_of_aligned_chunks():
    # Given
    leaves = leaves_of(21)
    tree = MerkleTree(b"".join(leaves))

    # When
    chunks = tree.level(2)

    # Then: chunks of 4 leaves, the last one partial
    assert chunks == [rfc6962_root(leaves[i : i + 4]) for i in range(0, 21, 4)]


@pytest.mark.parametrize(
    ("size", "most", "height"), [(1, 64, 0), (64, 64, 0), (65, 64, 1), (1_000_000, 64, 14)]
)
def test_the_chunk_height_is_the_lowest_with_at_most_so_many_chunks(size, most, height):
    assert chunk_height(size, most) == height


def test_a_leaf_commits_to_the_event_as_stored_at_its_place():
    # Given
    state = b'{"a":1}'

    # When
    data = leaf_data(7, "ab" * 16, 3, "x:Y.Z", state)

    # Then
    digest = hashlib.sha256(state).hexdigest()
    assert data == canonical_json([7, "ab" * 16, 3, "x:Y.Z", digest]).encode()
    assert leaf_data(8, "ab" * 16, 3, "x:Y.Z", state) != data
