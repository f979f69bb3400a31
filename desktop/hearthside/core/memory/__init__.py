"""Learned memory: the pure model, BM25 search and the store protocol (contract section 6)."""

from .bm25 import Bm25Index, tokenize
from .model import (
    ABSENT,
    MAX_KEYS,
    MAX_REVISIONS,
    MAX_VALUE_BYTES,
    CorruptMemoryError,
    InvalidKeyError,
    LimitError,
    LockTimeoutError,
    MemoryDocument,
    MemoryEntry,
    MemoryRecord,
    MemoryRevision,
    MemoryStoreError,
    NotFoundError,
    SecretValueError,
    VersionConflictError,
    secret_shape,
    validate_key,
)
from .store import MemoryStore

__all__ = [
    "ABSENT", "MAX_KEYS", "MAX_REVISIONS", "MAX_VALUE_BYTES", "Bm25Index", "CorruptMemoryError",
    "InvalidKeyError", "LimitError", "LockTimeoutError", "MemoryDocument", "MemoryEntry",
    "MemoryRecord", "MemoryRevision", "MemoryStore", "MemoryStoreError", "NotFoundError",
    "SecretValueError", "VersionConflictError", "secret_shape", "tokenize", "validate_key",
]
