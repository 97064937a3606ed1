"""Reading ``.safetensors`` files one tensor at a time with plain reads (no memory map), so
reading a model does not leave its pages resident in the process: the format is an 8-byte
little-endian header length, a JSON header (``name -> {dtype, shape, data_offsets}``) and
the data (https://huggingface.co/docs/safetensors)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np

from harness.core import HarnessError

__all__ = ["SafetensorsFile", "NUMPY_DTYPES"]

NUMPY_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16,
                "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
                "U8": np.uint8, "BOOL": np.bool_}


class SafetensorsFile:
    """One open ``.safetensors`` file: `names`, `dtype` (the file's code, e.g. ``BF16``),
    `shape`, and `read` (the stored precision; BF16 widened exactly to float32)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._file: BinaryIO = open(self.path, "rb")
        try:
            (length,) = struct.unpack("<Q", self._file.read(8))
            header = json.loads(self._file.read(length))
        except (struct.error, json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._file.close()
            raise HarnessError(f"{self.path} is not a safetensors file: {exc}") from None
        self.metadata = header.pop("__metadata__", None) or {}
        self._entries = header
        self._data_start = 8 + length

    def names(self) -> list[str]:
        return sorted(self._entries)

    def dtype(self, name: str) -> str:
        return self._entries[name]["dtype"]

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._entries[name]["shape"])

    def read(self, name: str) -> np.ndarray:
        entry = self._entries[name]
        code = entry["dtype"]
        if code not in NUMPY_DTYPES:
            raise HarnessError(f"{self.path}: tensor {name} has dtype {code}, which merging "
                               "does not read")
        start, end = entry["data_offsets"]
        self._file.seek(self._data_start + start)
        raw = np.frombuffer(self._file.read(end - start), dtype=NUMPY_DTYPES[code])
        if code == "BF16":  # the high half of a float32
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        return raw.reshape(entry["shape"])

    def close(self) -> None:
        self._file.close()
