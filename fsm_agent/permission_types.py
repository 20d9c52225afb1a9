"""What the engine and the session log know of permissions: the settings a run
records, the question asked through the effects door, and the verdict.

How a verdict is reached (rule syntax, Bash parsing, path patterns) is
`fsm_agent.permissions`, which re-exports all of this. Only a live run
evaluates; a replay answers every permission effect from its log, so it
loads these classes and not the evaluator.
"""

from __future__ import annotations

from typing import Any, Literal

from attrs import field, frozen

Behavior = Literal["allow", "ask", "deny"]


@frozen
class RuleSource:
    """One rule as written, and the directory its `/path` anchor starts from."""

    rule: str
    root: str = ""
    origin: str = ""


@frozen
class PermissionSettings:
    """The merged `permissions` of every settings file, plus the command line's lists.

    Recorded in the log header (inside `RunConfig`), so a replay never reads
    a settings file.
    """

    allow: tuple[RuleSource, ...] = ()
    ask: tuple[RuleSource, ...] = ()
    deny: tuple[RuleSource, ...] = ()
    additional_directories: tuple[str, ...] = ()
    default_mode: str | None = None
    sources: tuple[str, ...] = ()

    def merged(self, other: PermissionSettings) -> PermissionSettings:
        return PermissionSettings(
            allow=self.allow + other.allow,
            ask=self.ask + other.ask,
            deny=self.deny + other.deny,
            additional_directories=self.additional_directories + other.additional_directories,
            default_mode=other.default_mode or self.default_mode,
            sources=self.sources + other.sources,
        )


@frozen
class Decision:
    """The verdict on one call: what to do, why (for the model or the user), which rule.

    `grant` lists resolved paths outside the workspace that an allow rule or
    the user approved, so the tool's own confinement check lets them through.
    """

    behavior: Behavior
    reason: str = ""
    rule: str | None = None
    grant: tuple[str, ...] = ()
    suggestion: str | None = None
    outside: tuple[str, ...] = ()


@frozen
class PermissionRequest:
    """One call to judge: the tool, its (possibly hook-updated) input, the mode."""

    tool: str
    input: dict[str, Any] = field(factory=dict, hash=False)
    mode: str = "default"


@frozen
class PermissionAsk:
    """A question for the user: may this call run? `suggestion` is the rule "always" adds."""

    tool: str
    input: dict[str, Any] = field(factory=dict, hash=False)
    reason: str = ""
    suggestion: str | None = None
    outside: tuple[str, ...] = ()


ALLOW_ONCE, ALLOW_ALWAYS, DENY = "allow_once", "allow_always", "deny"
NO_TERMINAL = "no_terminal"
CANCELLED = "cancelled"
"""Not an answer: the question was withdrawn while it waited (the stream that started its
call failed), so the call is discarded and the user's answer, if one comes, is ignored."""
