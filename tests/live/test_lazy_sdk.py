"""The SDK loaded through `lazy_sdk` is the SDK: the same names, the same objects, on use.

Each side runs in a fresh interpreter (the test session has long since imported the
SDK whole), and describes what the SDK's packages export.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

PACKAGES = [
    "anthropic",
    "anthropic.types",
    "anthropic.types.beta",
    "anthropic.types.shared",
    "anthropic.resources",
    "anthropic.resources.beta",
    "anthropic._error_classes",
    "anthropic.lib.streaming",
]

DESCRIBE = """
import importlib, json, sys, types
def describe(value):
    name = getattr(value, "__qualname__", getattr(value, "__name__", None))
    return f"{type(value).__name__}:{getattr(value, '__module__', None)}:{name}"
out = {}
for package in PACKAGES:
    module = importlib.import_module(package)
    out[package] = {
        name: describe(getattr(module, name))
        for name in dir(module)
        if name.isidentifier() and not name.startswith("_")
        and not isinstance(getattr(module, name), types.ModuleType)
    }
print(json.dumps(out))
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def _exports(lazy: bool) -> dict[str, dict[str, str]]:
    setup = "from fsm_agent.live import lazy_sdk\nlazy_sdk.install()\n" if lazy else ""
    proc = _python(f"{setup}PACKAGES = {PACKAGES!r}\n{DESCRIBE}")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_lazy_sdk_exports_what_the_sdk_exports() -> None:
    """(Pydantic puts a parametrised generic's name, `Event[object]`, in its module's
    namespace, where no import can name it: only identifiers are compared.)"""
    eager, lazy = _exports(lazy=False), _exports(lazy=True)
    for package in PACKAGES:
        assert lazy[package] == eager[package], package
        assert len(eager[package]) > 10, package  # the packages export something to compare


def test_importing_the_sdk_leaves_the_beta_api_and_other_platforms_unloaded() -> None:
    code = (
        "import sys\n"
        "from fsm_agent.live import lazy_sdk\n"
        "lazy_sdk.install()\n"
        "import anthropic\n"
        "client = anthropic.AsyncAnthropic(api_key='k', base_url='http://127.0.0.1:9')\n"
        "client.messages\n"
        "unloaded = ['anthropic.lib.vertex', 'anthropic.lib.bedrock', 'anthropic.lib.foundry',\n"
        "            'anthropic.lib.tools', 'anthropic.resources.beta.beta',\n"
        "            'anthropic.types.beta.session_create_params',\n"
        "            'anthropic.types.beta.sessions.beta_managed_agents_session_event',\n"
        "            'anthropic.types.file_expired_error']\n"
        "loaded = [m for m in unloaded if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "print(sum(m.startswith('anthropic.') for m in sys.modules))\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) < 1500  # the whole SDK is about 3,100 modules


def test_a_package_that_does_more_than_re_export_loads_as_written() -> None:
    from fsm_agent.live.lazy_sdk import deferring_tail, exports_of

    assert exports_of("p", "from .a import B as B\n__all__ = ['B']\n") == (
        {"B": ("p.a", "B")},
        ["B"],
    )
    assert exports_of("p", "from .a import B\nB.model_rebuild()\n") is None
    assert exports_of("p", "from .a import *\n") is None
    assert deferring_tail("p", str(ROOT), "from ._x import y\n") is None


def test_an_error_response_finds_its_class_in_the_table_run_on_use() -> None:
    """`_error_classes` runs when an error first needs its table: the stand-in the
    client imported gives the class the SDK loaded whole gives."""
    code = (
        "import sys, httpx2\n"
        "from fsm_agent.live import lazy_sdk\n"
        "lazy_sdk.install()\n"
        "import anthropic\n"
        "from anthropic._base_client import make_status_error\n"
        "assert 'anthropic.types.file_expired_error' not in sys.modules\n"
        "request = httpx2.Request('POST', 'http://127.0.0.1:9/v1/messages')\n"
        "for status, kind in [(429, 'rate_limit_error'), (529, 'overloaded_error'),\n"
        "                     (404, 'not_found_error'), (418, 'teapot')]:\n"
        "    body = {'type': 'error', 'error': {'type': kind, 'message': 'm'}}\n"
        "    error = make_status_error('m', body=body, response=httpx2.Response(status,\n"
        "                              request=request))\n"
        "    print(type(error).__module__, type(error).__qualname__)\n"
    )
    lazy = _python(code)
    eager = _python(code.replace("lazy_sdk.install()", "pass").replace("assert", "pass  #"))
    assert lazy.returncode == 0 and eager.returncode == 0, lazy.stderr + eager.stderr
    assert lazy.stdout == eager.stdout
    assert "RateLimitError" in lazy.stdout
