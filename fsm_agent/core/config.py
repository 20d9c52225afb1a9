"""Run configuration: everything a run decides before the first step.

It is written into the session log header, so a replay runs with exactly
the configuration the recording had.
"""

from __future__ import annotations

from attrs import field, frozen
from attrs.validators import ge, optional

from fsm_agent.core.limits import (
    CAPPED_DEFAULT_MAX_TOKENS,
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_TOKENS,
    ESCALATED_MAX_TOKENS,
    MAX_STOP_HOOK_BLOCKS,
    MIN_CONTEXT_WINDOW,
)
from fsm_agent.core.permission_types import PermissionSettings

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_SYSTEM_PROMPT = (
    "You are a coding agent working in the user's workspace. Use the tools to read, "
    "change and check files; keep answers short and say what you did."
)


@frozen
class SessionChange:
    """What the user changed while a run went (the Agent SDK's `set_permission_mode` and
    `set_model`): the mode the next group of calls is judged in, the model the next
    request goes to; None for no change."""

    permission_mode: str | None = None
    model: str | None = None


NO_CHANGE = SessionChange()


@frozen
class CommandHook:
    """One command; `condition` is its `if`: a permission rule the call must match
    (tool events only), so `"if": "Bash(git *)"` runs it for git commands alone."""

    command: str
    timeout: float | None = None
    condition: str | None = None


@frozen
class HookMatcher:
    """One entry of `hooks.<event>`: a matcher and its commands, and the file it came from."""

    event: str
    hooks: tuple[CommandHook, ...]
    matcher: str = ""
    origin: str = ""


@frozen
class PathRule:
    """A `.claude/rules/*.md` file scoped by `paths:` frontmatter: shown to the model,
    once, when it first reads a file matching one of `globs` (relative to the workspace)."""

    path: str
    globs: tuple[str, ...]
    text: str


@frozen
class RunConfig:
    model: str = DEFAULT_MODEL
    cwd: str = "."
    fallback_model: str | None = None
    max_turns: int | None = field(default=None, validator=optional(ge(1)))
    token_budget: int | None = field(default=None, validator=optional(ge(1)))
    context_window: int = field(default=DEFAULT_CONTEXT_WINDOW, validator=ge(MIN_CONTEXT_WINDOW))
    """At least `MIN_CONTEXT_WINDOW`, as the command line and a scenario hold it: a smaller
    window has thresholds at or below zero."""
    max_output_tokens: int = field(default=DEFAULT_MAX_TOKENS, validator=ge(1))
    escalated_max_output_tokens: int = field(default=ESCALATED_MAX_TOKENS, validator=ge(1))
    capped_output: bool = False
    """The seeds' output cap: requests ask `CAPPED_DEFAULT_MAX_TOKENS` and a cut answer is
    retried once at the escalated limit (`max_output_tokens_escalate`) before it is asked
    to resume. Off, as in Claude Code 2.1.x, whose gate for it is off: a cut answer is
    asked to resume at once."""
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    user_context: dict[str, str] = field(factory=dict)
    system_context: dict[str, str] = field(factory=dict)
    tools: tuple[str, ...] = ("Read", "Write", "Edit", "Bash", "Glob", "Grep")
    permission_mode: str = "default"
    permissions: PermissionSettings = PermissionSettings()
    hooks: tuple[HookMatcher, ...] = ()
    concurrency_safe_tools: tuple[str, ...] = ("Read", "Glob", "Grep")
    max_tool_concurrency: int = 10
    stop_hook_block_cap: int = MAX_STOP_HOOK_BLOCKS
    """How many Stop-hook blocks in a row send the model on before the next is
    overridden (Claude Code's `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`); 0 or less: no cap."""
    streaming_tools: bool = True
    cut_calls_answered: bool = True
    """A tool call whose input `max_tokens` cut stays in the answer and gets its input's
    error as its result, and the loop takes the tools' path, as Claude Code 2.1.x does;
    logs written before this were recorded with such calls dropped (`old_logs`)."""
    parsed_inputs: bool = True
    """A call's input is taken as Claude Code 2.1.x parses it: a parameter left out gets
    its schema's default, and a control character in a Bash command is an input error;
    logs written before this were recorded with inputs as sent (`old_logs`)."""
    structured_results: bool = False
    """Tools build Claude Code's structured result of each call (`ToolOutcome.response`)
    for stream-json's `tool_use_result`, as they do for a PostToolUse hook."""
    session_source: str | None = "startup"
    """SessionStart's `source` (`startup`, `resume`, `clear`); None when the session
    started in an earlier run (a chat's later message): no SessionStart then."""
    session_env: str | None = None
    """The directory of the session's `CLAUDE_ENV_FILE`s, which its Bash commands source
    (`fsm_agent.tools.session_env`): the conversation's first run sets it when a SessionStart
    command hook may write there; its later runs and a `--resume` keep it (a directory
    that is not one of `~/.claude/session-env` is dropped: it may come from a log)."""
    autocompact: bool = True
    snip_threshold: int | None = field(default=None, validator=optional(ge(0)))
    path_rules: tuple[PathRule, ...] = ()
    memory_paths: tuple[str, ...] = ()
    """The memory files `user_context["claudeMd"]` holds: a nested CLAUDE.md's
    import of one of them is not shown to the model a second time."""
    parent_workspaces: tuple[str, ...] = ()
    """The workspaces of the runs a fork replays, when it runs in another: a file read
    in one counts as inside for nested CLAUDE.md files and path rules, so the
    replayed part finds what its parent found."""
    hooked_events: tuple[str, ...] | None = None
    """The hook events something listens to; the engine calls no hooks for the others.
    None: any event may have a hook (in-process hooks that do not say)."""
    home: str | None = None
    """The user's home directory, which a model's `~/…` file path means: hooks see such a
    path expanded, and a replay must expand it as the run did, not from its own machine.
    Set when a run starts; None in logs from before it was recorded."""

    @property
    def request_max_tokens(self) -> int:
        """What a request asks for before any escalation: under the output cap, the cap."""
        if self.capped_output:
            return min(self.max_output_tokens, CAPPED_DEFAULT_MAX_TOKENS)
        return self.max_output_tokens

    @property
    def workspaces(self) -> tuple[str, ...]:
        """Where a file read counts as inside, the parents' first: a fork sees files
        as its parent saw them, also when its own workspace holds the parent's."""
        return (*self.parent_workspaces, self.cwd)

    def has_hooks(self, event: str) -> bool:
        return self.hooked_events is None or event in self.hooked_events

    @property
    def effective_window(self) -> int:
        """The window less what a summary may need: the model's output limit (the
        escalated one, not the capped default a request asks for), at most 20k."""
        return self.context_window - min(self.escalated_max_output_tokens, 20_000)

    @property
    def blocking_limit(self) -> int:
        """Claude Code's hard limit: the effective window less a 3,000-token margin."""
        return self.effective_window - 3_000

    @property
    def collapse_threshold(self) -> int:
        """Past this count, context collapse stages old rounds for a later drain. On a
        window under 72,000 it lies past autocompact's, which then comes first: a
        staged collapse frees nothing until a prompt-too-long, and autocompact's
        summary would drop it at once."""
        return int(0.75 * self.effective_window)

    @property
    def autocompact_threshold(self) -> int:
        """Past this count (less what snip freed), autocompact summarises the history."""
        return self.effective_window - 13_000

    @property
    def microcompact_threshold(self) -> int:
        """Past this count, old tool results are cleared (a token trigger, not every turn):
        60 % of the effective window, at most autocompact's threshold, so that on a
        small window clearing still comes first and may make the summary needless."""
        return min(int(0.6 * self.effective_window), self.autocompact_threshold)
