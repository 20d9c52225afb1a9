"""`fsm-claude`: a drop-in `claude` for the Claude Agent SDKs, taking Claude Code's flags.

The SDKs start `claude` with `--output-format stream-json --verbose
--input-format stream-json` and talk the control protocol on stdin and stdout
(`fsm_agent.cli.sdk_session`); `-p PROMPT` with `--input-format text` is a
one-shot run, as `fsm-agent run` prints it. A flag of Claude Code's that this
loop cannot honour yet is refused with one line naming it, never ignored.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import click
from attrs import evolve

from fsm_agent.app.history import follow_up, glob_escape, sessions_dir
from fsm_agent.cli.headless import Budget, version
from fsm_agent.cli.main import main as run_command
from fsm_agent.cli.plan import plan_of
from fsm_agent.cli.run import piped_text, run_json, run_text
from fsm_agent.cli.sdk_session import SdkSession
from fsm_agent.cli.usage import exit_code, fail, is_utf8
from fsm_agent.core.permission_types import RuleSource
from fsm_agent.core.validation import SchemaError, check_schema
from fsm_agent.live.transcript_writer import TranscriptCursor
from fsm_agent.tape.log import next_run_log_path
from fsm_agent.tools import default_tools
from fsm_agent.tools.structured_output import NAME, StructuredOutputTool

CLAUDE_CODE_VERSION = "2.1.332"
"""The Claude Code release whose flags and stream-json this entry point follows (the
`conformance` extra's CLI): what `--version` and `system/init` report, so the SDKs'
minimum-version check (read from `claude_code_version`) passes."""

MODES = ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto", "manual"]

REFUSED: dict[str, bool] = {
    "--settings": True,
    "--setting-sources": True,
    "--continue": False,
    "--fork-session": False,
    "--resume-session-at": True,
    "--resume-drops-turn": True,
    "--max-thinking-tokens": True,
    "--thinking": True,
    "--thinking-display": True,
    "--effort": True,
    "--betas": True,
    "--task-budget": True,
    "--include-hook-events": False,
    "--plugin-dir": True,
    "--session-mirror": False,
}
"""Claude Code's flags the SDKs may pass that fsm-agent does not honour yet (True: it
takes a value): each is refused, by name, rather than ignored."""


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"{CLAUDE_CODE_VERSION} (fsm-agent {version()})")
        ctx.exit(0)


def _refused(fn: Any) -> Any:
    for flag, takes_value in reversed(REFUSED.items()):
        name = "refused_" + flag.strip("-").replace("-", "_")
        if takes_value:
            fn = click.option(flag, name, multiple=True, hidden=True)(fn)
        else:
            fn = click.option(flag, name, is_flag=True, hidden=True)(fn)
    return fn


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("prompt", required=False)
@click.option("-p", "--print", "print_", is_flag=True, help="Print the answer and exit.")
@click.option("--output-format", type=click.Choice(["text", "json", "stream-json"]), default="text")
@click.option("--input-format", type=click.Choice(["text", "stream-json"]), default="text")
@click.option("--verbose", is_flag=True, help="With json: every line; needed for stream-json.")
@click.option("--include-partial-messages", is_flag=True)
@click.option("--model", envvar="FSM_AGENT_MODEL")
@click.option("--fallback-model")
@click.option("--max-turns", type=click.IntRange(min=1))
@click.option(
    "--max-budget-usd",
    type=click.FloatRange(min=0, min_open=True),
    help="Stop once the responses cost this much (USD), as claude -p does.",
)
@click.option("--system-prompt")
@click.option("--system-prompt-file", type=click.Path(exists=True, dir_okay=False))
@click.option("--append-system-prompt")
@click.option("--permission-mode", type=click.Choice(MODES))
@click.option("--allowedTools", "--allowed-tools", "allowed_tools", multiple=True)
@click.option("--disallowedTools", "--disallowed-tools", "disallowed_tools", multiple=True)
@click.option("--tools", help='The built-in tools offered: "default", "" for none, or names.')
@click.option("--add-dir", multiple=True, type=click.Path(exists=True, file_okay=False))
@click.option("--permission-prompt-tool", help="stdio: the SDK's can_use_tool answers.")
@click.option("--resume", help="A session id (or log) of this workspace to continue.")
@click.option("--session-id", help="The session's id (a UUID).")
@click.option("--json-schema", help="The final answer's JSON Schema (StructuredOutput).")
@click.option("--mcp-config", multiple=True, help="MCP servers: only the SDK's (type sdk).")
@click.option("--strict-mcp-config", is_flag=True, help="No MCP servers but --mcp-config's.")
@click.option("--base-url", envvar="ANTHROPIC_BASE_URL", hidden=True)
@_refused
@click.option("--version", "-v", is_flag=True, expose_value=False, is_eager=True, callback=_version)
def claude(**options: Any) -> None:
    """Claude Code's command line over fsm-agent's loop, for the Claude Agent SDKs."""
    refused = [
        flag
        for flag in REFUSED
        if options.pop("refused_" + flag.strip("-").replace("-", "_")) not in (False, ())
    ]
    if refused:
        fail(f"not supported by fsm-agent yet: {', '.join(refused)}")
    output, input_format = options.pop("output_format"), options.pop("input_format")
    verbose, partial = options.pop("verbose"), options.pop("include_partial_messages")
    prompt: str | None = options.pop("prompt")
    options.pop("print_")
    options.pop("strict_mcp_config")  # no MCP server but --mcp-config's: no other is read
    sdk_servers = _sdk_servers(options.pop("mcp_config"))
    schema = _schema(options.pop("json_schema"))
    if output == "stream-json" and not verbose:
        fail("--output-format stream-json needs --verbose (as claude -p does)")
    if partial and output != "stream-json":
        fail("--include-partial-messages needs --output-format stream-json")
    if input_format == "stream-json" and output != "stream-json":
        fail("--input-format stream-json needs --output-format stream-json")
    prompt_tool = options.pop("permission_prompt_tool")
    if prompt_tool not in (None, "stdio"):
        fail(f"--permission-prompt-tool {prompt_tool}: only stdio (the SDK's can_use_tool) is")
    given_id = options.pop("session_id")
    tools = options.pop("tools")
    prompt_file = options.pop("system_prompt_file")
    if prompt_file is not None:
        if options["system_prompt"] is not None:
            fail("--system-prompt and --system-prompt-file are one or the other")
        options["system_prompt"] = Path(prompt_file).read_text(encoding="utf-8")
    resume = options.pop("resume")
    limit = options.pop("max_budget_usd")
    plan, resumed, _ = plan_of(
        **options,
        resume=_last_log(resume) if resume else None,
        scripted=None,
        cwd=None,
        log=None,
        context_window=None,
    )
    # A resumed session keeps its id, as `claude --resume` does; `--session-id` names another.
    session_id = _session_id(given_id) if given_id or resumed is None else resumed.session_id
    if resumed is not None and session_id != resumed.session_id:
        plan.fork_id, plan.transcript = session_id, TranscriptCursor()
    if tools is not None:
        plan.config = _only_tools(plan.config, tools)
    if limit is not None:
        plan.budget = Budget(limit)
    if output == "stream-json":  # the tools' own output shapes, as `tool_use_result`
        plan.config = evolve(plan.config, structured_results=True)
    history = list(resumed.messages) if resumed is not None else []
    if sdk_servers and input_format != "stream-json":
        fail("--mcp-config's SDK servers need --input-format stream-json (the SDK serves them)")
    if schema is not None and input_format != "stream-json":
        fail("--json-schema needs --input-format stream-json here (as the SDKs send it)")
    if schema is not None:  # the answer's own tool needs no permission (Claude Code's allows)
        plan.tools = {**default_tools(), NAME: StructuredOutputTool(schema)}
        rule = RuleSource(NAME, plan.config.cwd, "--json-schema")
        permissions = evolve(plan.config.permissions, allow=(*plan.config.permissions.allow, rule))
        plan.config = evolve(plan.config, permissions=permissions)
    if input_format == "stream-json":
        plan.log = next_run_log_path(plan.config.cwd, session_id)
        session = SdkSession(
            plan,
            session_id=session_id,
            history=history,
            partial=partial,
            can_use_tool=prompt_tool == "stdio",
            sdk_servers=sdk_servers,
            structured=schema is not None,
            claude_code_version=CLAUDE_CODE_VERSION,
        )
        sys.exit(session.serve(sys.stdin))
    if prompt is None or not prompt.strip():
        prompt = "" if sys.stdin.isatty() else piped_text(sys.stdin.buffer).strip()
    if not prompt:
        fail("no prompt given (pass PROMPT or pipe it on stdin)")
    if not is_utf8(prompt):
        fail("the prompt is not UTF-8 text")
    messages = follow_up(history, prompt)
    if output == "text":
        result, _ = run_text(plan, messages, quiet=True, verbose=False)
        if plan.budget is not None and plan.budget.reached:
            click.echo(plan.budget.text())
    else:
        result, _ = run_json(plan, messages, stream=output == "stream-json", partial=partial,
                             every=verbose)  # fmt: skip
    plan.end("other")
    sys.exit(1 if plan.budget is not None and plan.budget.reached else exit_code(result))


def _sdk_servers(configs: tuple[str, ...]) -> tuple[str, ...]:
    """The SDK servers `--mcp-config` names (JSON, or a file of it); a server of another
    type (stdio, sse, http) is refused by name: fsm-agent does not start MCP servers yet."""
    names: list[str] = []
    for given in configs:
        text = Path(given).read_text(encoding="utf-8") if Path(given).is_file() else given
        try:
            servers = json.loads(text).get("mcpServers")
        except (ValueError, AttributeError):
            servers = None
        if not isinstance(servers, dict):
            fail(f'--mcp-config {given[:80]}: not {{"mcpServers": {{name: config}}}}')
        other = [
            f"{name} ({cfg.get('type', 'stdio') if isinstance(cfg, dict) else '?'})"
            for name, cfg in servers.items()
            if not (isinstance(cfg, dict) and cfg.get("type") == "sdk")
        ]
        if other:
            fail(f"not supported by fsm-agent yet: --mcp-config servers {', '.join(other)}")
        names += [name for name in servers if name not in names]
    return tuple(names)


def _schema(given: str | None) -> dict[str, Any] | None:
    """`--json-schema`'s schema, refused in one line when it is no JSON Schema object."""
    if given is None:
        return None
    try:
        schema = json.loads(given)
        if not isinstance(schema, dict):
            raise SchemaError("it is not a JSON object")
        check_schema(NAME, schema)
    except (ValueError, SchemaError) as exc:
        fail(f"--json-schema: not a JSON Schema ({exc})")
    return schema


def _last_log(ref: str) -> Path:
    """`--resume`'s log: a session id names its session's log, whose last run holds the
    whole conversation (a chat's later runs, `ID.2.jsonl`, …, each a log of their own:
    the last); anything else (a log's path, an id's prefix) is looked up as
    `fsm-agent run --resume` does."""
    folder = sessions_dir(Path.cwd())
    first = folder / f"{ref}.jsonl"
    if "/" in ref or not first.is_file():
        return Path(ref)
    later = [
        p for p in folder.glob(f"{glob_escape(ref)}.*.jsonl") if p.stem[len(ref) + 1 :].isdigit()
    ]
    return max(later, key=lambda p: int(p.stem[len(ref) + 1 :]), default=first)


def _session_id(given: str | None) -> str:
    if given is None:
        return str(uuid.uuid4())
    try:
        return str(uuid.UUID(given))
    except ValueError:
        fail(f"--session-id {given}: not a UUID")


def _only_tools(config: Any, tools: str) -> Any:
    """`--tools`: the built-in tools not named are taken away (a bare deny rule each,
    which removes a tool from what the model is offered)."""
    if tools == "default":
        return config
    named = [t.strip() for t in tools.split(",") if t.strip()]
    unknown = [t for t in named if t not in config.tools]
    if unknown:
        fail(f"--tools: no such built-in tool: {', '.join(unknown)}")
    gone = tuple(RuleSource(t, config.cwd, "--tools") for t in config.tools if t not in named)
    permissions = evolve(config.permissions, deny=config.permissions.deny + gone)
    return evolve(config, permissions=permissions)


def main() -> None:
    """The `fsm-claude` console script."""
    run_command(claude, "fsm-claude")


if __name__ == "__main__":
    main()
