"""The shared TLS context: made once, in the thread a run starts beside the SDK's import."""

from __future__ import annotations

import ssl

from fsm_agent.live import tls


def test_the_context_started_early_is_the_one_every_client_gets() -> None:
    thread = tls.start()
    assert thread is not None, "the SDK's HTTP library is installed"
    thread.join(timeout=30)
    from fsm_agent.live.anthropic_model import tls_context

    context = tls_context()
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert tls_context() is context
    assert context in tls._made.values()  # the early one, not a second
