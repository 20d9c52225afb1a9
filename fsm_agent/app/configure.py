"""A command-line run's configuration, from its options, the settings files and the environment.

Not terminal work, so it sits below the CLI: what cannot make a run is a
`ConfigError` (the CLI prints it as one error line, exit 2) and a warning goes to
the `warn` callback, in the order it is found.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from attrs import evolve, frozen

from fsm_agent.app.environment import (
    ConfigError,
    api_key,
    check_bash_timeouts,
    concurrency_cap,
    idle_notify_s,
    max_turns_variable,
    mcp_limits,
    stop_hook_block_cap,
)
from fsm_agent.app.history import Resumed, ResumeError, aresume, find_log
from fsm_agent.core.abort import AbortSignal
from fsm_agent.core.config import DEFAULT_MODEL, RunConfig
from fsm_agent.core.limits import context_window as window_of
from fsm_agent.core.limits import output_limits
from fsm_agent.core.mcp_config import McpConfigError
from fsm_agent.core.model import Model
from fsm_agent.hooks.outcomes import Hooks
from fsm_agent.live import tls
from fsm_agent.live.claude_home import UserFiles
from fsm_agent.live.mcp_files import McpSetup, load_mcp
from fsm_agent.live.memory_files import gather, path_rules
from fsm_agent.live.settings import (
    SettingsError,
    accept_trust,
    load_settings,
    trusted_by_claude,
)
from fsm_agent.policy.permissions import MODE_ALIASES, UNSUPPORTED_MODES, unsupported_mode_warning
from fsm_agent.tape.log import LogError, refuse_existing

if TYPE_CHECKING:
    from fsm_agent.live.scripted import Scenario

Warn = Callable[[str], None]
AskTrust = Callable[[str, bool], bool]
"""The trust question put to the user in a terminal: `(workspace, is the home folder)`,
True for "Yes, I trust this folder"."""


class NotTrusted(ConfigError):
    """The user answered the trust question No: the session does not start, as Claude
    Code's does not."""


@frozen
class RunOptions:
    """What `run` and `chat` were given, as click parsed it."""

    scripted: Path | None = None
    cwd: str | None = None
    log: Path | None = None
    resume: Path | None = None
    max_turns: int | None = None
    model: str | None = None
    fallback_model: str | None = None
    base_url: str | None = None
    context_window: int | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    permission_mode: str | None = None
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    add_dir: tuple[str, ...] = ()
    trust: bool = False
    """The user trusts the workspace for this run, as accepting Claude Code's trust
    dialog would: its `.claude/settings.json` may allow tools and add directories."""
    mcp_config: tuple[str, ...] = ()
    strict_mcp_config: bool = False
    base_url_given_by: str = "--base-url"
    """How a bad base URL is named in its error: the option, or the variable it came from."""


@frozen
class Configured:
    """The run the options describe, before the CLI puts it in a `Plan`."""

    model: Model
    config: RunConfig
    hooks: Hooks | None
    abort: AbortSignal
    resumed: Resumed | None
    scenario_prompt: str | None
    idle_notify_s: float
    mcp: McpSetup | None = None
    """The MCP servers the run starts (and those awaiting approval); None: none."""


def config_with(config: RunConfig, **changes: Any) -> RunConfig:
    """`config` with the changes that are set: an option not given keeps what is there."""
    return evolve(config, **{k: v for k, v in changes.items() if v is not None})


def configure(options: RunOptions, warn: Warn, ask_trust: AskTrust | None = None) -> Configured:
    """The run `options` describe, on top of the resumed session's configuration if any.

    `ask_trust` (an interactive session's, in a terminal) is asked whether the user
    trusts a workspace the state file does not mark trusted, as Claude Code's first
    run in a folder asks: Yes is recorded there (in the home folder, for this session
    only, as in the CLI), No raises NotTrusted.

    Permission rules and hooks are read from ~/.claude/settings.json,
    .claude/settings.json, .claude/settings.local.json and the managed settings, once,
    here.
    """
    if options.scripted is None and api_key():
        start_loading_sdk(with_tls=tls.needs_tls(options.base_url))
    max_turns = options.max_turns
    if max_turns is None:
        max_turns = max_turns_variable()
    check_bash_timeouts()
    refuse_existing_log(options.log)
    resumed = resume(options.resume, options.cwd) if options.resume is not None else None
    if resumed is not None and options.scripted is None and options.model is None:
        _refuse_scripted_model(resumed)
    # A resumed run is live here: its `~` is this machine's home (arun fills it in), not
    # the one the earlier run recorded.
    base = evolve(resumed.config, home=None) if resumed is not None else RunConfig()
    workspace = os.path.realpath(options.cwd or (base.cwd if resumed is not None else "."))
    if not os.path.isdir(workspace):
        raise ConfigError(
            f"the resumed session's workspace {workspace} does not exist (pass --cwd)"
        )
    user_context, system_context, memory_paths = _context(workspace)
    trusted = True if options.trust else _asked_trust(workspace, ask_trust, warn)
    try:
        settings = load_settings(
            workspace,
            allowed_tools=options.allowed_tools,
            disallowed_tools=options.disallowed_tools,
            add_dirs=options.add_dir,
            trusted=trusted,
        )
    except SettingsError as exc:
        raise ConfigError(str(exc)) from None
    for warning in settings.warnings:
        warn(f"fsm-agent: warning: {warning}")
    permission_mode = options.permission_mode
    if permission_mode in UNSUPPORTED_MODES:
        warn(
            f"fsm-agent: warning: {unsupported_mode_warning(permission_mode, '--permission-mode')}"
        )
        permission_mode = UNSUPPORTED_MODES[permission_mode]
    permission_mode = MODE_ALIASES.get(permission_mode or "", permission_mode)
    config = config_with(
        base,
        cwd=workspace,
        user_context=user_context,
        system_context=system_context,
        memory_paths=memory_paths,
        path_rules=path_rules(Path(workspace)),
        permission_mode=settings.permissions.default_mode,
        permissions=settings.permissions,
        hooks=settings.hooks,
        max_tool_concurrency=concurrency_cap(),
        stop_hook_block_cap=stop_hook_block_cap(),
        session_source="resume" if resumed is not None else None,
    )
    abort = AbortSignal()
    hooks = None
    scenario_prompt = None
    fallback_model = options.fallback_model
    if options.scripted is not None:
        # Deferred (listed in docs/architecture.md): a run against a real model has no
        # scenario, and its first request waits on what it imports before the SDK's thread.
        from fsm_agent.live.scripted import ScriptedHooks, ScriptedModel

        scenario = load_scenario(options.scripted)
        scenario_prompt = scenario.prompt
        config = scenario.run_config(config)
        config = config_with(
            config, model=options.model, fallback_model=fallback_model, max_turns=max_turns
        )
        model: Model = ScriptedModel(scenario, abort)
        hooks = ScriptedHooks(scenario.hooks)
    else:
        default = base.model if resumed is not None else DEFAULT_MODEL
        config = config_with(
            config,
            model=options.model or default,
            fallback_model=fallback_model,
            max_turns=max_turns,
        )
        default_tokens, escalated_tokens = output_limits(config.model)
        config = config_with(
            config,
            context_window=window_of(config.model),
            max_output_tokens=default_tokens,
            escalated_max_output_tokens=escalated_tokens,
        )
        model = real_model(options.base_url, options.base_url_given_by)
    if fallback_model is not None and fallback_model == config.model:
        raise ConfigError(f"--fallback-model {fallback_model} is the main model: give another one")
    config = config_with(
        config,
        context_window=options.context_window,
        permission_mode=permission_mode,
        system_prompt=options.system_prompt,
    )
    if config.permission_mode == "bypassPermissions" and settings.bypass_disabled:
        warn(
            f"fsm-agent: warning: {settings.bypass_disabled}: permissions."
            'disableBypassPermissionsMode is "disable": bypassPermissions mode is off; '
            "using 'default'"
        )
        config = config_with(config, permission_mode="default")
    if options.append_system_prompt:
        parts = (config.system_prompt, options.append_system_prompt)
        config = config_with(config, system_prompt="\n\n".join(p for p in parts if p))
    idle = idle_notify_s()
    if resumed is not None and resumed.cut_short is not None:
        warn(
            f"fsm-agent: warning: {resumed.path}: the run was cut short after step "
            f"{resumed.cut_short} (killed?); going on from where its log stops, with every "
            "call it left unanswered marked interrupted"
        )
    mcp = mcp_setup(options, workspace, warn, trusted=trusted)
    return Configured(model, config, hooks, abort, resumed, scenario_prompt, idle, mcp)


def _asked_trust(workspace: str, ask: AskTrust | None, warn: Warn) -> bool | None:
    """True when the user just said yes to the trust question; None (the state file
    decides) when there is nobody to ask or it already trusts the workspace."""
    user = UserFiles.of()
    if ask is None or trusted_by_claude(workspace, "", user.state_file):
        return None
    home = os.path.realpath(workspace) == os.path.realpath(os.path.expanduser("~"))
    if not ask(workspace, home):
        raise NotTrusted(workspace)
    if not home:
        try:
            accept_trust(workspace, user)
        except SettingsError as exc:
            warn(f"fsm-agent: warning: {exc}; trusted for this session only")
    return True


def mcp_setup(
    options: RunOptions, workspace: str, warn: Warn, *, trusted: bool | None = None
) -> McpSetup | None:
    """The MCP servers of `.mcp.json`, `~/.claude.json` and `--mcp-config`, read once."""
    trusted = True if options.trust else trusted
    return mcp_servers_in(
        workspace, options.mcp_config, options.strict_mcp_config, warn, trusted=trusted
    )


def mcp_servers_in(
    workspace: str,
    configs: tuple[str, ...],
    strict: bool,
    warn: Warn,
    *,
    trusted: bool | None = None,
) -> McpSetup | None:
    """The MCP servers a run in `workspace` starts (and those awaiting approval);
    `trusted` as `load_mcp` takes it."""
    start, call, tokens = mcp_limits()
    try:
        setup, warnings = load_mcp(
            workspace, os.path.expanduser("~"), os.environ, configs=configs, strict=strict,
            start_timeout=start, call_timeout=call, max_tokens=tokens, trusted=trusted,
        )  # fmt: skip
    except McpConfigError as exc:
        raise ConfigError(str(exc)) from None
    for warning in warnings:
        warn(f"fsm-agent: warning: {warning}")
    return setup if setup else None


def _context(cwd: str) -> tuple[dict[str, str], dict[str, str], tuple[str, ...]]:
    """CLAUDE.md files, date, working directory, git status: read once, kept in the log header."""
    return gather(Path(cwd), Path.home(), dt.date.today().isoformat())


def refuse_existing_log(log: Path | None) -> None:
    """`--log` onto a file is refused before anything runs: the file may be the very
    log being resumed or forked, and a new log never overwrites one."""
    if log is not None:
        try:
            refuse_existing(log)
        except LogError as exc:
            raise ConfigError(f"{exc} (give --log a new path)") from None


def _refuse_scripted_model(resumed: Resumed) -> None:
    """A scripted session's model is `scripted`, which no API serves: going on with it
    needs a scenario, or a real model named."""
    from fsm_agent.live.scripted import ScenarioConfig

    if resumed.config.model == ScenarioConfig().model:
        raise ConfigError(
            f"{resumed.path}: the session ran a scripted model; go on with "
            "--scripted SCENARIO.json, or with a real model: --model ID"
        )


def resume(ref: Path, cwd: str | None) -> Resumed:
    try:
        return asyncio.run(aresume(find_log(ref, cwd or ".")))
    except ResumeError as exc:
        raise ConfigError(str(exc)) from None


def load_scenario(path: Path) -> Scenario:
    from fsm_agent.live.scripted import Scenario, ScenarioError

    try:
        return Scenario.load(path)
    except ScenarioError as exc:
        raise ConfigError(str(exc)) from None


def real_model(base_url: str | None, given_by: str = "--base-url") -> Model:
    """The API's client, from what was typed and set. The base URL is trimmed, as
    Claude Code trims it; `given_by` names where it came from in its error."""
    key = api_key()
    if not key:
        raise ConfigError(
            "ANTHROPIC_API_KEY is not set. Set it to run against a real model, or run "
            "offline: `fsm-agent run --scripted SCENARIO.json` (a scripted model) or "
            "`fsm-agent replay LOG` (a recorded session)."
        )
    if not key.isprintable():  # the transport's error would print it, and the log keep it
        raise ConfigError(
            "ANTHROPIC_API_KEY holds a control character, which no HTTP header can carry: "
            "check how it was set"
        )
    base_url = (base_url or "").strip() or None
    if base_url is not None and not is_http_url(base_url):
        raise ConfigError(
            f"{given_by} {base_url!r} is not an http(s) URL "
            "(give one like https://api.anthropic.com or http://127.0.0.1:4000)"
        )
    # Deferred (listed in fsm_agent/cli/lazy.py): the SDK takes about a second to import.
    from fsm_agent.live.anthropic_model import AnthropicModel, max_retries, stream_idle_timeout

    try:
        idle = stream_idle_timeout(os.environ)
        retries = max_retries(os.environ)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return AnthropicModel(
        api_key=key, base_url=base_url, max_retries=retries, stream_idle_timeout=idle
    )


def start_loading_sdk(*, with_tls: bool = True) -> threading.Thread:
    """Import the SDK in a thread, now: a run against a real model needs it for its first
    request, and reading settings, CLAUDE.md files and git status meanwhile waits on
    files and processes. `real_model`'s import then finds it loaded, or waits for it.
    Not a daemon: a run that ends before it needs the SDK (a blocked prompt) would leave
    the interpreter finalizing under an import in flight, which can crash it (seen: a
    segfault at the exit of an SDK session); the exit waits for the import instead.

    With `with_tls` (a base URL that is not plain `http://`), the CA bundle is loaded in a
    thread of its own beside the import, where OpenSSL parses it without the
    interpreter lock; a plain `http` run never loads it."""
    if with_tls:
        tls.start()
    thread = threading.Thread(target=_load_sdk, name="fsm-agent-sdk-import", daemon=False)
    thread.start()
    return thread


def _load_sdk() -> None:
    # The import builds some 100,000 objects, nearly none of them garbage: collecting
    # meanwhile costs it about 15 %, and once frozen, later collections skip them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        # A failure is `real_model`'s to report, when it imports the module again.
        with contextlib.suppress(Exception):
            from fsm_agent.live.anthropic_model import warm

            warm()
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def is_http_url(url: str) -> bool:
    """Whether the SDK can send a request to `url`: it would take `localhost:8080`,
    `ftp://…` or a line break inside, then fail every attempt as if the connection
    were lost."""
    if not url.isprintable() or any(c.isspace() for c in url):
        return False
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
