"""The SDK loaded through `lazy_sdk` is the SDK: the same names, the same objects, on use.

Each side runs in a fresh interpreter (the test session has long since imported the
SDK whole), and describes what the SDK's packages export.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

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


def _python(code: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FSM_AGENT_CACHE_DIR": str(cache) if cache else ""}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env
    )


def _lazy_and_eager(script: str) -> tuple[list[str], list[str]]:
    """`script`'s output lines with the SDK loaded through lazy_sdk and loaded whole
    (`SETUP` in it stands for where lazy_sdk is installed)."""
    lazy = _python(
        script.replace("SETUP", "from fsm_agent.live import lazy_sdk\nlazy_sdk.install()")
    )
    eager = _python(script.replace("SETUP", ""))
    assert lazy.returncode == 0 and eager.returncode == 0, (
        lazy.stderr[-3000:] + eager.stderr[-3000:]
    )
    return lazy.stdout.splitlines(), eager.stdout.splitlines()


def _exports(lazy: bool, cache: Path | None = None) -> dict[str, dict[str, str]]:
    setup = "from fsm_agent.live import lazy_sdk\nlazy_sdk.install()\n" if lazy else ""
    proc = _python(f"{setup}PACKAGES = {PACKAGES!r}\n{DESCRIBE}", cache)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_lazy_sdk_exports_what_the_sdk_exports() -> None:
    """(Pydantic puts a parametrised generic's name, `Event[object]`, in its module's
    namespace, where no import can name it: only identifiers are compared.)"""
    eager, lazy = _exports(lazy=False), _exports(lazy=True)
    for package in PACKAGES:
        assert lazy[package] == eager[package], package
        assert len(eager[package]) > 10, package  # the packages export something to compare


def test_the_rewrites_kept_between_runs_give_the_same_sdk(tmp_path: Path) -> None:
    """The second run takes every rewrite from the cache the first one filled."""
    cache = tmp_path / "cache"
    eager, filling = _exports(lazy=False), _exports(lazy=True, cache=cache)
    kinds = {entry.name.split(".cpython")[0].rsplit(".", 1)[1] for entry in cache.iterdir()}
    assert kinds == {"exports", "tail", "deferred", "late", "on-use"}
    stamps = {entry.name: entry.stat().st_mtime_ns for entry in cache.iterdir()}
    cached = _exports(lazy=True, cache=cache)
    assert {entry.name: entry.stat().st_mtime_ns for entry in cache.iterdir()} == stamps
    for package in PACKAGES:
        assert cached[package] == filling[package] == eager[package], package


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
        "            'anthropic.types.file_expired_error', 'anthropic.types.beta.beta_message',\n"
        "            'anthropic.lib.streaming._beta_messages',\n"
        "            'anthropic.resources.messages.batches',\n"
        "            'anthropic.types.message_create_params',\n"
        "            'anthropic.types.messages.batch_create_params',\n"
        "            'anthropic.types.tool_union_param', 'anthropic.types.message_param']\n"
        "loaded = [m for m in unloaded if m in sys.modules]\n"
        "loaded += [m for m in sys.modules if m.startswith('anthropic.types.beta.')]\n"
        "loaded += [m for m in sys.modules if m.endswith('_param')]  # the request's types\n"
        "assert not loaded, loaded\n"
        "count = sum(m.startswith('anthropic.') for m in sys.modules)\n"
        "assert type(client.messages.batches).__name__ == 'AsyncBatches'  # made when asked\n"
        "print(count)\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) < 900  # the whole SDK is about 3,100 modules


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


BETA_CALLS = """
import sys
from tests.support.messages_server import MessagesServer, text
SETUP
import anthropic
kwargs = dict(model="claude-test-1", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
with MessagesServer() as server:
    server.reply(text("One."), text("Two."), text("Three."))
    client = anthropic.Anthropic(api_key="k", base_url=server.url, max_retries=0)
    with client.messages.stream(**kwargs) as stream:
        message = stream.get_final_message()
        print(type(message).__qualname__, message.content[0].text)
    print("beta loaded:", "anthropic.types.beta.beta_message" in sys.modules)
    with client.beta.messages.stream(**kwargs) as stream:
        for event in stream:
            pass
        final = stream.get_final_message()
    print(type(final).__module__, type(final).__qualname__, final.content[0].text)
    events = [type(e).__qualname__ for e in client.beta.messages.create(stream=True, **kwargs)]
    print(events)
    from anthropic.lib._tracing import _streaming, _api_call
    from anthropic.types.beta import BetaMessage
    print(isinstance(final, _streaming.BetaMessage), issubclass(BetaMessage, _api_call.BetaMessage))
    print(isinstance(object(), _streaming.BetaMessage))
"""


def test_the_beta_api_works_once_its_types_load() -> None:
    """A run's calls leave the beta types unloaded; a beta call then loads them, and the
    tracing code's checks (late classes until then) answer as the real classes do."""
    lazy_lines, eager_lines = _lazy_and_eager(BETA_CALLS)
    assert lazy_lines[1] == "beta loaded: False" and eager_lines[1] == "beta loaded: True"
    assert lazy_lines[:1] + lazy_lines[2:] == eager_lines[:1] + eager_lines[2:]
    lazy_out = "\n".join(lazy_lines)
    assert "BetaMessage Two." in lazy_out and "True True" in lazy_out


PARAM_CALLS = """
import json, sys
import pydantic
from tests.support.messages_server import MessagesServer, text
SETUP
import anthropic
tools = [{"name": "t", "description": "d", "input_schema": {"type": "object"}}]
kwargs = dict(model="claude-test-1", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
class Answer(pydantic.BaseModel):
    a: int
with MessagesServer() as server:
    server.reply(text("One."), text("Two."), text('{"a": 3}'))
    client = anthropic.Anthropic(api_key="k", base_url=server.url, max_retries=0)
    message = client.messages.create(tools=tools, tool_choice={"type": "auto"}, **kwargs)
    with client.messages.stream(system="s", **kwargs) as stream:
        streamed = stream.get_final_message()
    print("params loaded:", any(m.endswith("_param") for m in sys.modules))
    dump = lambda p: json.dumps(p, default=lambda block: block.model_dump())
    print(type(message.to_param()).__name__, dump(message.to_param()), dump(streamed.to_param()))
    parsed = client.messages.parse(output_format=Answer, **kwargs)
    print(type(parsed.parsed_output).__qualname__, parsed.parsed_output)
    from anthropic.types import AssistantMessageParam, ToolUnionParam
    print(AssistantMessageParam.__qualname__, ToolUnionParam)
"""


def test_the_request_parameter_types_load_on_use_and_give_what_the_sdk_gives() -> None:
    """The request's TypedDicts are late classes in the messages resource, the tracing
    helpers and `Message`: a request with tools, a stream and a parsed answer send and
    give what the SDK loaded whole does, and `to_param` builds its TypedDict then."""
    lazy_lines, eager_lines = _lazy_and_eager(PARAM_CALLS)
    assert lazy_lines[0] == "params loaded: False" and eager_lines[0] == "params loaded: True"
    assert lazy_lines[1:] == eager_lines[1:]
    assert "Answer a=3" in "\n".join(lazy_lines)


def test_a_late_class_is_no_class_of_anything_until_its_module_runs() -> None:
    from types import ModuleType

    from fsm_agent.live.lazy_sdk import late_class

    late = late_class("fsm_agent_test_late_module", "Real")
    assert not isinstance(1, late) and not issubclass(int, late)
    module = ModuleType("fsm_agent_test_late_module")
    exec("class Real(int): pass", module.__dict__)
    sys.modules[module.__name__] = module
    try:
        assert isinstance(module.Real(1), late) and issubclass(module.Real, late)
        assert not isinstance(1, late)
        assert late._loaded() is module.Real  # type: ignore[attr-defined]
        assert isinstance(module.Real(2), (str, late))
    finally:
        del sys.modules[module.__name__]


def test_a_beta_name_used_as_more_than_a_type_at_the_top_level_loads_as_written() -> None:
    import anthropic

    from fsm_agent.live.lazy_sdk import BETA, late_tree

    head = "from __future__ import annotations\nfrom ...types.beta import BetaMessage\n"
    sdk = str(Path(anthropic.__file__).parent)
    name = "anthropic.lib._tracing._x"
    assert late_tree(name, head + "FIELDS = BetaMessage.model_fields\n", sdk, (BETA,)) is None
    assert late_tree(name, head + "def f(BetaMessage): pass\n", sdk, (BETA,)) is None
    typed = head + "A = int | BetaMessage\ndef f(x: BetaMessage) -> bool:\n"
    typed += "    return isinstance(x, (int, BetaMessage))\n"
    _, late = late_tree(name, typed, sdk, (BETA,)) or (None, None)
    assert late == {"BetaMessage": ("anthropic.types.beta.beta_message", "BetaMessage")}
    used = late_tree(name, head + "def f(x):\n    return BetaMessage.construct(x)\n", sdk, (BETA,))
    assert used is not None and "BetaMessage._loaded().construct" in ast.unparse(used[0])


def test_a_pattern_takes_only_the_names_whose_module_matches() -> None:
    """`from ...types import` of a parameter type and a response type: the first is a
    late class, the second imported as written; in a module whose annotations are
    evaluated, a late class may name a function's return, never a field."""
    import anthropic

    from fsm_agent.live.lazy_sdk import PARAMS, late_tree

    sdk = str(Path(anthropic.__file__).parent)
    name = "anthropic.types.x"
    head = "from .message_param import MessageParam\nfrom . import usage\n"
    mixed = "from __future__ import annotations\nfrom ..types import Usage, MessageParam\n"
    tree, late = late_tree("anthropic.lib.x", mixed + "def f() -> MessageParam: ...\n", sdk,
                           (PARAMS,)) or (None, None)  # fmt: skip
    assert late == {"MessageParam": ("anthropic.types.message_param", "MessageParam")}
    assert tree is not None and "from ..types import Usage\n" in ast.unparse(tree) + "\n"
    method = head + "class M:\n    def to(self) -> MessageParam:\n"
    method += "        return MessageParam(role='user', content='x')\n"
    used = late_tree(name, method, sdk, (PARAMS,))
    assert used is not None and "MessageParam._loaded()(role=" in ast.unparse(used[0])
    field = head + "class M:\n    param: MessageParam\n"
    assert late_tree(name, field, sdk, (PARAMS,)) is None
    assert late_tree(name, head + "Alias = list[MessageParam]\n", sdk, (PARAMS,)) is None
