"""The TLS context every model client shares: its CA bundle loaded on the first handshake.

Loading the CA bundle is about 35 ms of CPU (much of it OpenSSL's, without the
interpreter lock), and a run against a plain `http://` server (a local proxy, the
test server) never uses it. So every client gets one `DeferredContext`, which makes
the HTTP library's own default context only when a connection first needs TLS: a
redirect or a proxy to `https` is verified as before. A run whose base URL may need
TLS starts loading it at once, in a thread of its own beside the SDK's import
(`start`), so its first handshake finds it made.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import ssl
import threading
from typing import Any

_made: dict[str, ssl.SSLContext] = {}
"""The HTTP libraries' own default contexts, CA bundle loaded, by library."""
_deferred: dict[str, DeferredContext] = {}
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


class DeferredContext(ssl.SSLContext):
    """A client's TLS context that loads nothing until a connection first needs TLS: then
    it makes `library`'s default context (`context_of`) and every TLS connection is made
    by that one, with the ALPN protocols the connection pool asked of this one.

    A subclass, not a stand-in: the HTTP libraries take a `verify` that is no
    `ssl.SSLContext` for a CA file's path. Made as the libraries' default is
    (`PROTOCOL_TLS_CLIENT`: certificates required, host names checked), so what a
    caller reads of it says what the connections get.
    """

    library: str
    _alpn: list[str] | None

    def __new__(cls, library: str) -> DeferredContext:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self, library: str) -> None:
        self.library = library
        self._alpn = None

    def made(self) -> ssl.SSLContext:
        """The context the connections use, made now (or waited for) if it is not yet."""
        context = context_of(self.library)
        if self._alpn is not None:
            context.set_alpn_protocols(self._alpn)
        return context

    def set_alpn_protocols(self, alpn_protocols: Any) -> None:
        """Kept for the context the connections use, which httpcore asks it of before
        each connection."""
        self._alpn = list(alpn_protocols)
        super().set_alpn_protocols(self._alpn)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        return self.made().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        return self.made().wrap_bio(*args, **kwargs)


def deferred(library: str) -> DeferredContext:
    """The one deferred context of `library`'s clients."""
    with _lock:
        if library not in _deferred:
            _deferred[library] = DeferredContext(library)
        return _deferred[library]


def needs_tls(base_url: str | None) -> bool:
    """Whether a client of `base_url` (None or blank: `ANTHROPIC_BASE_URL`, else the
    API's `https`) may connect with TLS: anything but a plain `http://` URL may. Read by
    its scheme alone, never parsed: a URL too broken to parse (`http://[::1`) is
    `real_model`'s to refuse, as an error in what was typed."""
    url = (base_url or "").strip() or os.environ.get("ANTHROPIC_BASE_URL", "").strip()
    return not url.lower().startswith("http://")


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
    except Exception:  # the first handshake reports it, when it makes the context again
        return
