"""AES-256-GCM, the cipher of the envelopes that seal personal values (domain/privacy).

The domain names it by topic (it imports no cryptography library): a 12-byte random
nonce per value, the 16-byte tag appended to the ciphertext, and the subject's
reference and key id as associated data.
"""

from __future__ import annotations

import os

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12


class AESGCMCipher:
    """`domain.privacy.envelopes.Cipher` by AES-256-GCM."""

    name = "AES-256-GCM"

    def encrypt(self, key: bytes, plaintext: bytes, aad: bytes) -> tuple[bytes, bytes]:
        nonce = os.urandom(NONCE_BYTES)
        return nonce, AESGCM(key).encrypt(nonce, plaintext, aad)

    def decrypt(self, key: bytes, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
        """The plaintext; raises (cryptography's InvalidTag) if anything was changed."""
        return AESGCM(key).decrypt(nonce, ciphertext, aad)


CIPHER = AESGCMCipher()
