"""The debugger's breakpoint language: what `b SPEC` means, and when a breakpoint hits.

Pure: a breakpoint reads only a step's state and iteration, so it is parsed and judged
apart from the command shell (`fsm_agent.cli.debugger`) that lists and clears them.
"""

from __future__ import annotations

import contextlib
import json
import operator
import re
from collections.abc import Callable
from enum import Enum
from typing import Any

import attrs
from attrs import fields, frozen

from fsm_agent.core.transcript import Transcript
from fsm_agent.engine.driver import StepInfo
from fsm_agent.engine.machine import STATES, Phase, edge_names
from fsm_agent.engine.state import Iteration, LoopState

FIELDS = tuple(f.name for f in fields(LoopState))
ITERATION_FIELDS = tuple(f.name for f in fields(Iteration))
ITERATION_PATHS = tuple(f"it.{f}" for f in ITERATION_FIELDS)
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "=": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_CONDITION = re.compile(r"^([A-Za-z_][^\s=!<>]*)\s*(==|!=|>=|<=|>|<|=)\s*(.+)$")
"""FIELD OP VALUE; a field path may go through a key with `/` or `-` in it (a file read)."""


class CommandError(ValueError):
    """A command the debugger cannot carry out; shown as one line."""


class MissingItem(CommandError):
    """A dict key or list index a value does not have: another step's value may."""


def _no_field(name: str) -> CommandError:
    if name.split(".")[0] == "it":
        return CommandError(f"no field {name!r} (it. fields: {', '.join(ITERATION_FIELDS)})")
    return CommandError(
        f"no field {name!r} (LoopState fields: {', '.join(FIELDS)}; it.FIELD for the iteration)"
    )


def field_value(state: LoopState, name: str, iteration: Iteration | None = None) -> Any:
    """A dotted field of the state, or (`it.…`) of the iteration the step filled in.

    Only data is walked: attrs fields, dict keys and list indexes (`messages.3`),
    never an arbitrary attribute (`__class__`, a method), which has no value to show.
    """
    value: Any = state
    parts = name.split(".")
    head: list[str] = []
    if parts[0] == "it":
        if iteration is None:
            raise CommandError("no iteration at the start: step forward first")
        value, parts, head = iteration, parts[1:], ["it"]
        if not parts:
            return value
    for i, part in enumerate(parts):
        if isinstance(value, dict):
            rest = ".".join(parts[i:])
            if rest in value:  # a key with dots in it: a file path
                return value[rest]
            if part not in value:
                keys = f"keys: {', '.join(map(str, value))}" if value else "no keys"
                raise MissingItem(_no_part(head + parts[:i], part, keys))
            value = value[part]
        elif isinstance(value, Transcript | list | tuple):
            try:
                value = value[int(part)]
            except (ValueError, IndexError):
                raise MissingItem(_no_part(head + parts[:i], part, f"{len(value)} items")) from None
        elif attrs.has(type(value)) and part in _data_fields(type(value)):
            value = getattr(value, part)
        elif i == 0:
            raise _no_field(name)
        else:
            known = _data_fields(type(value)) if attrs.has(type(value)) else ()
            what = f"fields: {', '.join(known)}" if known else "it has no fields"
            raise _no_part(head + parts[:i], part, what)
    return value


def _data_fields(cls: type) -> tuple[str, ...]:
    """The fields `p` shows of an attrs class: its public ones."""
    return tuple(f.name for f in fields(cls) if not f.name.startswith("_"))


def _no_part(before: list[str], part: str, known: str) -> CommandError:
    return CommandError(f"no field {part!r} in {'.'.join(before)} ({known})")


def comparable(value: Any) -> Any:
    if isinstance(value, Transcript | tuple | list):
        return len(value)
    if isinstance(value, Enum):
        return value.value
    return value


_ORDERING = frozenset({">", ">=", "<", "<="})


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _literal(text: str) -> Any:
    text = text.strip()
    aliases = {"None": None, "True": True, "False": False}
    if text in aliases:
        return aliases[text]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text.strip("'\"")


@frozen
class Breakpoint:
    """Stops on arriving in a state, taking an edge, the model asking for a tool,
    or a condition becoming true.

    Conditions (and `turn=N`) trigger on the step where they turn true, not on
    every step after, so `c` moves on past them.
    """

    spec: str
    kind: str
    name: str = ""
    op: str = "=="
    value: Any = None
    temporary: bool = False
    enabled: bool = True
    """pdb's `disable N` keeps a breakpoint but stops it firing until `enable N`."""

    @classmethod
    def parse(cls, spec: str) -> Breakpoint:
        """A bare NAME is a state when one has that name, else an edge: the final
        states and their edges share names, and arriving is taking the edge."""
        spec = spec.strip()
        step = re.fullmatch(r"(?:step\s*=\s*)?(\d+)", spec)
        if step:  # pdb's `b LINENO`: here the position is a step number
            return cls(f"step={int(step.group(1))}", "step", value=int(step.group(1)))
        if spec in STATES:
            return cls(f"state={spec}", "state", spec)
        if spec in edge_names():
            return cls(f"edge={spec}", "edge", spec)
        key, sep, rest = spec.partition("=")
        if sep and key.strip() in ("state", "edge") and not rest.startswith("="):
            name = rest.strip()
            known = STATES if key.strip() == "state" else edge_names()
            if name not in known:
                raise CommandError(f"no {key.strip()} {name!r} (known: {', '.join(known)})")
            return cls(spec, key.strip(), name)
        if sep and key.strip() == "tool" and rest.strip() and not rest.startswith("="):
            return cls(spec, "tool", rest.strip())
        turn = re.fullmatch(r"turn\s*(?:=|==|\s)\s*(.*)", spec)
        if turn:
            if not turn.group(1).isdecimal():
                raise CommandError(f"cannot read breakpoint {spec!r}: turn=N takes a turn number")
            return cls(spec, "condition", "turn_count", "==", int(turn.group(1)))
        match = _CONDITION.match(spec)
        if not match:
            raise CommandError(
                f"cannot read breakpoint {spec!r}: use a state or edge name, a step number, "
                "state=NAME, edge=NAME, tool=NAME, turn=N or FIELD>VALUE"
            )
        name, op, value = match.groups()
        if value.lstrip()[:1] in ("<", ">", "=", "!"):
            raise CommandError(f"cannot read breakpoint {spec!r}: one operator, then a value")
        head = name.split(".")
        root = ".".join(head[:2]) if head[0] == "it" else head[0]
        if root not in FIELDS and root not in ITERATION_PATHS:
            raise _no_field(name)
        return cls(spec, "condition", name, op, _literal(value))

    def check(self, state: LoopState, iteration: Iteration | None) -> None:
        """Refuse a condition that can never hold: `holds` would take the comparison's
        TypeError for false at every step. Judged on the field's value at `state`."""
        if self.kind != "condition":
            return
        value: Any = None
        if self.name.split(".")[0] != "it" or iteration is not None:
            with contextlib.suppress(MissingItem):  # a key or message another step may have
                value = field_value(state, self.name, iteration)
        listed = isinstance(value, Transcript | list | tuple)
        what = "a list, compared by its length" if listed else "a number"
        if self.op in _ORDERING and not _number(self.value):
            raise self._refused(f"{self.op} compares numbers" + (f" ({what})" if listed else ""))
        current = comparable(value)
        if isinstance(current, bool) and not isinstance(self.value, bool):
            raise self._refused(f"{self.name} is true or false")
        if _number(current) and not _number(self.value):
            raise self._refused(f"{self.name} is {what}; {self.value!r} is not a number")
        if current is not None and self.value is not None:
            try:
                _OPS[self.op](current, self.value)
            except TypeError:
                raise self._refused(f"{self.name} and {self.value!r} do not compare") from None

    def _refused(self, why: str) -> CommandError:
        return CommandError(f"cannot read breakpoint {self.spec!r}: {why}")

    def holds(self, state: LoopState, iteration: Iteration | None = None) -> bool:
        try:
            value = field_value(state, self.name, iteration)
            return bool(_OPS[self.op](comparable(value), self.value))
        except (TypeError, CommandError):
            return False

    def hits(self, before: StepInfo | LoopState, info: StepInfo) -> bool:
        """`before` is the step before (its state alone at the start, with no iteration)."""
        if not self.enabled:
            return False
        if self.kind == "step":
            return info.step == self.value
        if self.kind == "state":
            return info.dest == self.name
        if self.kind == "edge":
            return info.edge == self.name
        if self.kind == "tool":
            return info.source == Phase.API_CALL and any(
                b.name == self.name for b in info.iteration.tool_use_blocks
            )
        was = (before.state, before.iteration) if isinstance(before, StepInfo) else (before, None)
        return self.holds(info.state, info.iteration) and not self.holds(*was)
