"""The TLS context every model client shares, made once per HTTP library.

Loading the CA bundle is about 40 ms of CPU that OpenSSL spends without the
interpreter lock, so a run starts it in a thread of its own beside the SDK's
import (`start`), where in the import's thread it ran after it, in series.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

_made: dict[str, ssl.SSLContext] = {}
_lock = threading.Lock()
LIBRARIES = ("httpx2", "httpx")
"""The HTTP libraries the SDK has used, newest first."""


def context_of(library: str) -> ssl.SSLContext:
    """The default TLS context of `library` (`httpx2`, `httpx`), as it makes it itself;
    a second caller waits for the one being made."""
    with _lock:
        if library not in _made:
            module = importlib.import_module(library)
            _made[library] = module.create_ssl_context()
        return _made[library]


def start() -> threading.Thread | None:
    """Make the context of the library the SDK is likely to use, in a thread, now; None
    when none is installed. Not a daemon, as the SDK's import thread is not."""
    for library in LIBRARIES:
        if importlib.util.find_spec(library) is not None:
            thread = threading.Thread(
                target=_quietly, args=(library,), name="fsm-agent-tls", daemon=False
            )
            thread.start()
            return thread
    return None


def _quietly(library: str) -> None:
    try:
        context_of(library)
    except Exception:  # the client's own call reports it, when it makes the context again
        return
