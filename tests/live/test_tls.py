"""The shared TLS context: the CA bundle loaded on the first handshake, never for a plain
`http://` server; over real TLS on loopback, a certificate the client does not trust
is refused before any request is sent, and one `SSL_CERT_FILE` names is trusted."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from fsm_agent.live import tls
from tests.support.certificates import Issued, issued
from tests.support.cli import MODEL
from tests.support.messages_server import MessagesServer, text
from tests.support.startup import watched_run

NO_RETRIES = {"CLAUDE_CODE_MAX_RETRIES": "0"}


@pytest.fixture(name="certificates")
def certificates_fixture(tmp_path: Path) -> Issued:
    return issued(tmp_path / "certificates")


def test_every_client_shares_one_deferred_context() -> None:
    from fsm_agent.live.anthropic_model import tls_context

    context = tls_context()
    assert isinstance(context, tls.DeferredContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert tls_context() is context


def test_the_deferred_context_connects_through_the_librarys_default() -> None:
    """A handshake is made by the library's own default context (the one `start` makes
    early), with the ALPN protocols the connection pool set on the deferred one."""
    thread = tls.start()
    assert thread is not None, "the SDK's HTTP library is installed"
    thread.join(timeout=30)
    deferred = tls.deferred(tls.LIBRARIES[0])
    deferred.set_alpn_protocols(["http/1.1"])
    made = deferred.made()
    assert made in tls._made.values() and made is not deferred
    wrapped = deferred.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="example.com")
    assert wrapped.context is made
    assert wrapped.server_hostname == "example.com"


@pytest.mark.parametrize(
    "url",
    [None, "", "https://api.example.com", "HTTPS://h", "localhost:8080", "http//x"],
)
def test_anything_but_a_plain_http_url_may_need_tls(
    url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    assert tls.needs_tls(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:4000", " HTTP://h", "http://[::1"])
def test_a_plain_http_url_needs_no_tls_and_a_broken_one_raises_nothing(url: str) -> None:
    """`http://[::1` is no URL `urlsplit` can parse: it is `real_model`'s to refuse, as a
    usage error, not a traceback here."""
    assert not tls.needs_tls(url)


def test_the_environments_base_url_counts_when_none_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://[::1")
    assert not tls.needs_tls(None)
    assert tls.needs_tls("https://api.example.com")


def test_an_untrusted_certificate_is_refused_and_nothing_reaches_the_server(
    certificates: Issued, tmp_path: Path
) -> None:
    with MessagesServer(tls=certificates.server_context()) as server:
        server.reply(text("Hello.", model=MODEL))
        seen, proc = watched_run(server, tmp_path, env=NO_RETRIES)
        requests = list(server.requests)
    assert seen["exit"] != 0, proc.stdout
    assert "CERTIFICATE_VERIFY_FAILED" in proc.stdout + proc.stderr
    assert requests == []
    assert "load_verify_locations" in seen["loaded"]  # https: the bundle, loaded early


def test_the_ca_that_ssl_cert_file_names_is_trusted(certificates: Issued, tmp_path: Path) -> None:
    with MessagesServer(tls=certificates.server_context()) as server:
        server.reply(text("Hello.", model=MODEL))
        seen, proc = watched_run(
            server, tmp_path, env={**NO_RETRIES, "SSL_CERT_FILE": str(certificates.ca_file)}
        )
        bodies = server.bodies()
    assert seen["exit"] == 0, proc.stdout + proc.stderr
    assert "Hello." in proc.stdout
    assert len(bodies) == 1
