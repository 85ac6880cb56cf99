"""CRC-32C (Castagnoli), the checksum of record batches, from the ``crc32c`` package.

The package's ``__init__`` imports ``importlib.metadata`` only to set ``__version__``, a
noticeable part of the broker's start-up (docs/benchmarks.md, "Scale and start-up"). The
package's compiled extension module is loaded on its own instead (it is the whole
implementation); where it cannot be found that way, the package is imported as usual.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Checksum = Callable[..., int]


def _extension() -> Any:
    spec = importlib.machinery.PathFinder.find_spec("crc32c")
    if spec is None or not spec.submodule_search_locations:
        return None
    for where in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(where) / f"_crc32c{suffix}"
            if path.is_file():
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", str(path))
                ext_spec = importlib.util.spec_from_loader(loader.name, loader)
                if ext_spec is None:
                    return None
                module = importlib.util.module_from_spec(ext_spec)
                loader.exec_module(module)
                return module
    return None


def _load() -> Checksum:
    module: Any = sys.modules.get("crc32c")
    if module is None:
        try:
            module = _extension()
        except (ImportError, OSError):
            module = None
    if module is None or not callable(getattr(module, "crc32c", None)):
        import crc32c as package

        module = package
    fn: Checksum = module.crc32c
    return fn


#: ``crc32c(data, value=0) -> int`` over any buffer (bytes, bytearray, memoryview).
crc32c: Checksum = _load()
