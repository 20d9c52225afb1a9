"""The replay debugger: step through a recorded session with pdb's habits.

`Debugger.onecmd(line)` runs one command and returns what to show (a rich
renderable), so the command loop is driven directly in tests; `interact`
is the terminal loop around it. Positions are steps: at step k the machine
has just taken transition k (step 0 is the start, before any transition).
States come from `fsm_agent.tape.stepper.Stepper`, which replays lazily;
breakpoints are parsed and judged by `fsm_agent.tape.breakpoints`.
"""

from __future__ import annotations

import cmd
import io
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, TypeGuard

import attrs
from rich.console import Console, Group, RenderableType
from rich.pretty import Pretty
from rich.table import Table
from rich.text import Text

from fsm_agent.cli.render import printable
from fsm_agent.cli.usage import interrupts_deferred
from fsm_agent.core.codec import block_to_api, dumps, unstructure
from fsm_agent.core.messages import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from fsm_agent.core.transcript import Transcript
from fsm_agent.engine.driver import StepInfo
from fsm_agent.engine.machine import (
    CONTINUE_REASONS,
    STATES,
    TERMINAL_REASONS,
    edge_names,
    edges_from,
)
from fsm_agent.engine.state import LoopState
from fsm_agent.tape.breakpoints import (
    FIELDS,
    ITERATION_FIELDS,
    ITERATION_PATHS,
    Breakpoint,
    CommandError,
    field_value,
)
from fsm_agent.tape.divergence import Divergence, LogEnded, divergence_report, short_diff
from fsm_agent.tape.header import other_machine_note
from fsm_agent.tape.log import LogError, edge_text
from fsm_agent.tape.state_diff import StateParts, state_changes
from fsm_agent.tape.stepper import Stepper

PATH_SHOWN = 15
MESSAGES_SHOWN = 10

HELP = (
    ("n, s, next, step [COUNT]", "go to the next step, or COUNT steps on"),
    ("back [COUNT]", "go back one step, or COUNT steps"),
    ("g N, goto N, j N, jump N", "go to step N (0 is the start)"),
    ("c, cont, continue", "run to the next breakpoint, or the end"),
    ("r, return", "run to the end of this iteration: the next Continue or Terminal edge"),
    ("unt, until [N]", "run to step N (a breakpoint on the way stops it first); no N: the next"),
    (
        "b, break [SPEC]",
        "list breakpoints, or stop at SPEC: N (a step), NAME (a state or edge), state=NAME, "
        "edge=NAME, tool=NAME (the model asks for it), turn=N, FIELD>VALUE",
    ),
    ("tbreak SPEC", "a breakpoint deleted when it is first hit"),
    ("cl, clear [N]", "delete breakpoint N, or all of them"),
    ("disable [N …], enable [N …]", "stop breakpoints N firing, or let them again (no N: all)"),
    (
        "p, print, pp FIELD",
        "print a LoopState field (dotted: budget.continuation_count); `p` lists them; "
        "it.FIELD: the iteration the step's phase filled in (it.stop_reason); `p it` lists it",
    ),
    ("msgs", "the messages sent to the model at this step"),
    ("diff [A B]", "how the LoopState changed from step A to B (default: previous step to this)"),
    ("w, where, bt", "the path so far and where the machine is now"),
    ("l, list", "the edges out of the current state, with their guards"),
    ("ll, longlist", "the whole edge table, state by state, the current state marked"),
    ("effects", "the effect records of this step"),
    ("h, help [COMMAND]", "this list, or one command's line"),
    ("q, quit, exit", "leave"),
)


_ANOTHER_STEP = ": this step's; g N first for step N's"
NO_ARGUMENT = {
    "do_continue": "",
    "do_return": "",
    "do_where": "",
    "do_list": "",
    "do_longlist": "",
    "do_msgs": _ANOTHER_STEP,
    "do_effects": _ANOTHER_STEP,
}
"""The commands that take no argument, by handler: one given is refused, not ignored
(`effects 3` would show this step's effects as if they were step 3's)."""


def _names(row: str, command: str) -> bool:
    """Whether a help row (`"n, s, next, step [COUNT]"`) names `command`."""
    return command in {word.strip(",") for word in row.split() if not word.startswith("[")}


def _count(arg: str, command: str) -> int:
    """How many steps a stepping command moves: gdb's `next N`; one when not given."""
    arg = arg.strip()
    if not arg:
        return 1
    if not arg.isdecimal() or int(arg) == 0:
        raise CommandError(f"usage: {command} [COUNT] (a number of steps, 1 or more)")
    return int(arg)


def _short(value: Any, limit: int = 100) -> str:
    """One line of what the log holds: its escapes are shown, not obeyed (`printable`)."""
    text = value if isinstance(value, str) else dumps(value)
    text = printable(text.replace("\n", "⏎").replace("\t", " "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def message_line(i: int, message: Message) -> Text:
    parts = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            parts.append(f"[tool_use {block.name} {dumps(block.input)}]")
        elif isinstance(block, ToolResultBlock):
            content = block.content if isinstance(block.content, str) else "[blocks]"
            err = " error" if block.is_error else ""
            parts.append(f"[tool_result{err} {content}]")
        else:
            parts.append(f"[{block.type}]")
    meta = " (meta)" if message.is_meta else ""
    line = Text(f"{i:>4} ", style="dim", no_wrap=True, overflow="ellipsis")
    line.append(f"{message.role}{meta}: ", style="bold")
    line.append(_short(" ".join(parts), 110))
    return line


class Debugger(cmd.Cmd):
    """pdb-style commands over a recorded session; `onecmd` returns what to show."""

    prompt = "(fsm) "

    def __init__(self, path: Path, width: int = 100) -> None:
        super().__init__()
        self.stepper = Stepper(path)
        self.path = path
        self.pos = 0
        self.breakpoints: dict[int, Breakpoint] = {}
        self._next_bp = 1
        self.done = False
        self.width = width
        self.lastcmd = ""

    # -- the loop -------------------------------------------------------------

    def onecmd(self, line: str) -> RenderableType:  # type: ignore[override]
        line = line.strip()
        if not line:
            line = self.lastcmd
            if not line:
                return Text("")
        self.lastcmd = line
        name, arg, _ = self.parseline(line)
        handler = getattr(self, f"do_{name}", None) if name else None
        if handler is None:
            return Text(f"*** unknown command {line.split()[0]!r}; type help", style="red")
        try:
            if arg and handler.__name__ in NO_ARGUMENT:
                raise CommandError(f"usage: {name} (no argument{NO_ARGUMENT[handler.__name__]})")
            return handler(arg or "")
        except (CommandError, LogError) as exc:
            return Text(f"*** {exc}", style="red")

    def text(self, line: str) -> str:
        """`onecmd` rendered as plain text: for tests and pipes."""
        buffer = io.StringIO()
        Console(file=buffer, width=self.width, color_system=None).print(self.onecmd(line))
        return buffer.getvalue()

    def interact(self, console: Console) -> None:
        """The terminal loop. As in pdb, a command that fails unexpectedly prints a
        `***` line and the session goes on (`onecmd` itself lets it through, for tests);
        Ctrl-C stops a command (a long `c`) and leaves the position where it was."""
        console.print(self.banner())
        while not self.done:
            try:
                line = input(self.prompt)
            except EOFError:
                console.print()
                break
            except KeyboardInterrupt:
                console.print()
                continue
            try:
                shown = self.onecmd(line)
                with interrupts_deferred():
                    console.print(shown)
            except KeyboardInterrupt:
                self.stepper.reset()
                console.print(Text(f"\n*** interrupted; still at step {self.pos}", style="red"))
            except Exception as exc:
                console.print(Text(f"*** {type(exc).__name__}: {exc}", style="red"))
        self.stepper.close()

    def banner(self) -> RenderableType:
        steps = self.stepper.index.steps
        head = Text(f"fsm-agent replay debugger: {self.path} ({steps} steps). ")
        head.append("Type help for the commands.", style="dim")
        return Group(head, self.position())

    # -- moving ---------------------------------------------------------------

    def _info(self, step: int) -> StepInfo | None:
        if step < 0:  # the stepper would take it for a step back from its end
            raise CommandError(f"no step {step}: the log has steps 0..{self.stepper.index.steps}")
        return None if step == 0 else self.stepper.at(step)

    def _state(self, step: int) -> LoopState:
        if step == 0:
            return self.stepper.initial
        info = self._info(step)
        if info is None:
            raise CommandError(self._beyond(step))
        return info.state

    def _beyond(self, step: int, lead: str = "") -> str:
        """Why there is no step `step`; `lead` says so instead of "no step N"."""
        stopped = self.stepper.stopped_by
        lead = lead or f"no step {step}"
        if isinstance(stopped, LogEnded):
            return f"{lead}: {stopped}"
        if isinstance(stopped, Divergence):
            report = f"{lead}: the code no longer replays the log\n{divergence_report(stopped)}"
            reached = self.stepper.reached
            if stopped.step <= reached:
                report += (
                    f"\n  (a tool call started while the model streamed asked for it at step "
                    f"{stopped.step}; the replay learns of it when the calls are collected, "
                    f"after step {reached}, so steps {stopped.step}..{reached} were shown)"
                )
            note = other_machine_note(self.stepper.log)
            return report if note is None else f"{report}\n{note}"
        if stopped is not None:
            return f"the replay stopped after step {self.stepper.reached}: {stopped}"
        return f"{lead}: the log has steps 0..{self.stepper.index.steps}"

    def _go(self, step: int) -> RenderableType:
        if step < 0:
            raise CommandError("already at the start (step 0)")
        if step > 0 and self._info(step) is None:
            raise CommandError(self._beyond(step))
        self.pos = step
        return self.position()

    def position(self, note: str = "") -> RenderableType:
        total = self.stepper.index.steps
        line = Text(f"step {self.pos}/{total}: ", style="bold")
        if self.pos == 0:
            line.append(f"start, in {STATES[0]}")
            turn = self.stepper.initial.turn_count
        else:
            info = self._info(self.pos)
            assert info is not None
            line.append(f"{info.source} -[", style="")
            line.append(info.edge, style="bold cyan")
            line.append(f"]-> {info.dest}")
            turn = info.state.turn_count
        line.append(f"  turn {turn}", style="dim")
        index = self.stepper.index
        if len(index.runs) > 1:  # a session of several runs (an Agent SDK session's messages)
            run = index.run_of(self.pos)
            line.append(f"  run {run}/{len(index.runs)}", style="dim")
            ended = index.run_end(self.pos) if self.pos else None
            if ended is not None:
                line.append(f"  (run {run} ends: {ended.get('reason')})", style="dim")
        if note:
            line.append(f"  {note}", style="yellow")
        if self.pos == total:  # step 0 too: a prompt hook can end a run before step 1
            result = self.stepper.index.result()
            if result is not None:
                line.append(f"  (end: {result.get('reason')})", style="dim")
            else:
                line.append("  (end of the log: cut short, no result)", style="dim")
        return line

    def do_next(self, arg: str) -> RenderableType:
        """Like `back`, a count past the end stops at the last step (and says so); one
        past where the replay stops (a divergence) stops there, as `c` does."""
        target, last = self.pos + _count(arg, "n"), self.stepper.index.steps
        if self._info(min(target, last)) is None and self.stepper.reached > self.pos:
            self.pos = self.stepper.reached
            raise CommandError(self._beyond(self.pos + 1, f"stopped at step {self.pos}"))
        if target <= last or self.pos >= last:
            return self._go(target)
        self._go(last)
        return self.position(f"the last step (no step {target})")

    do_n = do_s = do_step = do_next

    def do_back(self, arg: str) -> RenderableType:
        count = _count(arg, "back")
        return self._go(max(0, self.pos - count) if self.pos else -1)

    def do_goto(self, arg: str) -> RenderableType:
        try:
            step = int(arg)
        except ValueError:
            raise CommandError("usage: g N (a step number)") from None
        self._info(step)  # refuses a negative step: _go takes one for "before the start"
        return self._go(step)

    do_g = do_j = do_jump = do_goto

    def do_continue(self, arg: str) -> RenderableType:
        return self._run(lambda info: False, "no breakpoint hit: at the end")

    do_c = do_cont = do_continue

    def do_return(self, arg: str) -> RenderableType:
        """pdb's `return` (run until this frame returns): here, until the iteration
        ends, on a Continue edge back to preprocess or on a Terminal one."""
        return self._run(
            lambda info: info.edge in CONTINUE_REASONS or info.dest in TERMINAL_REASONS,
            "at the end",
        )

    do_r = do_return

    def do_until(self, arg: str) -> RenderableType:
        """pdb's `until LINENO` (run on to that line, stopping at a breakpoint on the
        way): here to step N. Without N, one step, as pdb's on a line with no loop."""
        arg = arg.strip()
        if not arg:
            return self.do_next("")
        if not arg.isdecimal():
            raise CommandError("usage: until [N] (a step number)")
        target, last = int(arg), self.stepper.index.steps
        if target > last:
            raise CommandError(f"no step {target}: the log has steps 0..{last}")
        if target <= self.pos:
            raise CommandError(
                f"step {target} is not ahead (at step {self.pos}): g {target} goes there"
            )
        return self._run(lambda info: info.step >= target, f"at step {target}")

    do_unt = do_until

    def _run(self, until: Callable[[StepInfo], bool], at_end: str) -> RenderableType:
        """Run on to the first step where a breakpoint hits or `until` holds."""
        before: list[StepInfo | LoopState] = [self._info(self.pos) or self._state(self.pos)]
        hit: list[int] = []

        def stop_when(info: StepInfo) -> bool:
            hit.extend(n for n, bp in self.breakpoints.items() if bp.hits(before[0], info))
            before[0] = info
            return bool(hit) or until(info)

        info = self.stepper.run_until(self.pos, stop_when)
        if info is None:
            self.pos = self.stepper.reached
            if self.stepper.stopped_by is not None:
                raise CommandError(self._beyond(self.pos + 1, f"stopped at step {self.pos}"))
            return self.position(at_end)
        self.pos = info.step
        notes = []
        for n in hit:
            bp = self.breakpoints[n]
            if bp.temporary:
                del self.breakpoints[n]
                notes.append(f"temporary breakpoint {n} ({bp.spec}), deleted")
            else:
                notes.append(f"breakpoint {n} ({bp.spec})")
        return self.position(", ".join(notes))

    # -- breakpoints ----------------------------------------------------------

    def do_break(self, arg: str) -> RenderableType:
        if not arg.strip():
            if not self.breakpoints:
                return Text("no breakpoints")
            table = Table("num", "breakpoint", box=None)
            for n, bp in self.breakpoints.items():
                spec = f"{bp.spec} (temporary)" if bp.temporary else bp.spec
                table.add_row(str(n), Text(spec if bp.enabled else f"{spec} (disabled)"))
            return table
        return self._add(self._checked(Breakpoint.parse(arg)))

    def _checked(self, bp: Breakpoint) -> Breakpoint:
        """`bp`, refused now if its condition could never hold."""
        last = self.stepper.index.steps
        if bp.kind == "step" and not 0 < bp.value <= last:
            raise CommandError(f"no step {bp.value} to stop at: the log has steps 1..{last}")
        info = self._info(self.pos)
        bp.check(self._state(self.pos), info.iteration if info is not None else None)
        return bp

    do_b = do_break

    def do_tbreak(self, arg: str) -> RenderableType:
        if not arg.strip():
            raise CommandError("usage: tbreak SPEC (as for break)")
        return self._add(attrs.evolve(self._checked(Breakpoint.parse(arg)), temporary=True))

    def _add(self, bp: Breakpoint) -> Text:
        n = self._next_bp
        self._next_bp += 1
        self.breakpoints[n] = bp
        kind = "temporary breakpoint" if bp.temporary else "breakpoint"
        tools = [spec.name for spec in self.stepper.specs]
        if bp.kind == "tool" and bp.name not in tools:
            return Text(
                f"{kind} {n}: {bp.spec} (this session has no tool {bp.name!r}: "
                f"{', '.join(tools)}; it fires only if the model asks for one anyway)"
            )
        return Text(f"{kind} {n}: {bp.spec}")

    def do_clear(self, arg: str) -> RenderableType:
        if not arg.strip():
            count = len(self.breakpoints)
            self.breakpoints.clear()
            return Text(f"deleted {count} breakpoint(s)")
        try:
            n = int(arg)
            del self.breakpoints[n]
        except (ValueError, KeyError):
            raise CommandError(f"no breakpoint {arg.strip()!r}") from None
        return Text(f"deleted breakpoint {n}")

    do_cl = do_clear

    def do_disable(self, arg: str) -> RenderableType:
        return self._enable(arg, False)

    def do_enable(self, arg: str) -> RenderableType:
        return self._enable(arg, True)

    def _enable(self, arg: str, on: bool) -> Text:
        """pdb's `disable`/`enable [N …]`: all breakpoints when none is named."""
        numbers = list(self.breakpoints) if not arg.split() else []
        for word in arg.split():
            if not word.isdecimal() or int(word) not in self.breakpoints:
                raise CommandError(f"no breakpoint {word!r}")
            numbers.append(int(word))
        for n in numbers:
            self.breakpoints[n] = attrs.evolve(self.breakpoints[n], enabled=on)
        done = "enabled" if on else "disabled"
        if not numbers:
            return Text("no breakpoints")
        return Text(
            f"{done} breakpoint{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"
        )

    # -- looking --------------------------------------------------------------

    def do_p(self, arg: str) -> RenderableType:
        state = self._state(self.pos)
        info = self._info(self.pos)
        iteration = info.iteration if info is not None else None
        name = arg.strip()
        if name in ("", "it"):
            source: Any = state if not name else field_value(state, "it", iteration)
            table = Table("field", "value", box=None)
            for f in FIELDS if not name else ITERATION_FIELDS:
                table.add_row(f, Text(self._show_value(getattr(source, f), 70)))
            return table
        value = field_value(state, name, iteration)
        if isinstance(value, Transcript):
            lines = [Text(f"{len(value)} messages, digest {value.digest[:16]}")]
            first = max(0, len(value) - MESSAGES_SHOWN)
            if first:
                lines.append(Text(f"     … {first} earlier (p {name}.N shows one)", style="dim"))
            lines.extend(message_line(i, value[i]) for i in range(first, len(value)))
            return Group(*lines)
        if attrs.has(type(value)) or isinstance(value, dict | list | tuple):
            plain = _plain(value)
            if not plain:
                return Text(f"{name} = {dumps(plain)}")
            return Group(Text(f"{name} ="), Pretty(plain, indent_guides=False))
        return Text(f"{name} = {self._show_value(value, 2000)}")

    do_print = do_pp = do_p

    @staticmethod
    def _show_value(value: Any, limit: int) -> str:
        if isinstance(value, Transcript):
            return f"{len(value)} messages"
        if isinstance(value, Enum):
            return repr(value.value)
        if isinstance(value, str | int | float | bool) or value is None:
            return repr(value)
        return _short(_plain(value), limit)

    def do_msgs(self, arg: str) -> RenderableType:
        if self.pos == 0:
            raise CommandError("no request at the start: step forward first")
        info = self._info(self.pos)
        assert info is not None
        model = [r for r in self.stepper.index.effects_of(self.pos) if r["name"] == "model"]
        if not model:
            return Text(f"step {self.pos} ({info.source}) sent no model request")
        sent = {r.digest(): r for r in self.stepper.requests(self.pos)}
        lines: list[RenderableType] = []
        for record in model:
            args = record.get("args") or {}
            lines.append(
                Text(
                    f"model request: {args.get('model')} ({args.get('purpose')}), "
                    f"max_tokens {args.get('max_tokens')}, {args.get('messages')} messages",
                    style="bold",
                )
            )
            request = sent.get(record["request"])
            if request is None:  # the code asked for another request (a divergence)
                lines.append(Text("  (the code made no such request)", style="dim"))
                continue
            lines.extend(message_line(i, m) for i, m in enumerate(request.messages))
        return Group(*lines)

    def do_diff(self, arg: str) -> RenderableType:
        parts = arg.split()
        try:
            if len(parts) not in (0, 2):
                raise ValueError
            a, b = (int(parts[0]), int(parts[1])) if parts else (max(self.pos - 1, 0), self.pos)
        except ValueError:
            raise CommandError("usage: diff [A B] (two step numbers)") from None
        first, second = self._state(a), self._state(b)
        lines: list[RenderableType] = [Text(f"LoopState, step {a} → step {b}:", style="bold")]
        for f in FIELDS:
            x, y = getattr(first, f), getattr(second, f)
            if x == y:
                continue
            if isinstance(x, Transcript):
                lines.append(Text(f"  messages: {len(x)} → {len(y)}"))
                if y.items[: len(x)] == x.items:  # appended to: the new ones
                    lines.extend(
                        message_line(i + len(x), m) for i, m in enumerate(y.items[len(x) :])
                    )
                else:  # rewritten (a compaction, a replay's own): which message, block, text
                    old = StateParts([_plain(m) for m in x], {})
                    new = StateParts([_plain(m) for m in y], {})
                    lines.extend(Text(f"  {c.line()}") for c in state_changes(old, new))
                continue
            for line in short_diff(_plain(x), _plain(y), f"{f}."):
                lines.append(Text(f"  {line}"))
        if len(lines) == 1:
            lines.append(Text("  (no difference)"))
        lines.extend(self._effects_between(min(a, b), max(a, b)))
        return Group(*lines)

    def _effects_between(self, a: int, b: int) -> list[RenderableType]:
        """The effects the steps after `a` up to `b` asked for: a tool call changes the state
        only at the next turn, yet it ran in between."""
        lines: list[RenderableType] = []
        for step in range(a + 1, b + 1):
            lines.extend(self._effect_lines(step))
        if lines:
            lines.insert(0, Text(f"effects of steps {a + 1}..{b}:", style="bold"))
        return lines

    def do_where(self, arg: str) -> RenderableType:
        index = self.stepper.index
        first = max(1, self.pos - PATH_SHOWN + 1)
        lines: list[RenderableType] = []
        if first > 1:
            lines.append(Text(f"  … {first - 1} earlier steps", style="dim"))
        for step in range(first, self.pos + 1):
            record = index.transition(step)
            mark = "→" if step == self.pos else " "
            edge = edge_text((record["from"], record["edge"], record["to"]))
            lines.append(Text(f"{mark} {step:>4} {edge}  turn {record['turn']}"))
        if self.pos == 0:
            lines.append(Text("→    0 start"))
        return Group(*lines, *self._here())

    do_w = do_bt = do_where

    def do_list(self, arg: str) -> RenderableType:
        """pdb lists the code around the current line; here the code is the edge table."""
        return Group(*self._here())

    do_l = do_list

    def do_longlist(self, arg: str) -> RenderableType:
        """pdb's `ll` shows the whole function; here the whole machine, the state the
        machine is in marked `→` and the edge the log takes next `▶`."""
        index = self.stepper.index
        here = STATES[0] if self.pos == 0 else index.transition(self.pos)["to"]
        upcoming = index.transition(self.pos + 1)["edge"] if self.pos < index.steps else None
        lines = []
        for state in STATES:
            mark = "→" if state == here else " "
            lines.append(Text(f"{mark} {state}", style="bold" if state == here else ""))
            for edge in edges_from(state):
                taken = "▶" if state == here and edge.name == upcoming else " "
                lines.append(Text(f"    {taken} -[{edge.name}]-> {edge.dest}   when {edge.when}"))
        return Group(*lines)

    do_ll = do_longlist

    def _here(self) -> list[Text]:
        """The state the machine is in, its edges out with their guards, ▶ on the logged one."""
        index = self.stepper.index
        state = STATES[0] if self.pos == 0 else index.transition(self.pos)["to"]
        upcoming = index.transition(self.pos + 1)["edge"] if self.pos < index.steps else None
        lines = [Text(f"now in {state}", style="bold")]
        result = index.result() if self.pos == 0 == index.steps else None
        if result is not None:
            lines.append(Text(f"  the run ended {result.get('reason')} before its first edge"))
            return lines
        for edge in edges_from(state):
            mark = "▶" if edge.name == upcoming else " "
            lines.append(Text(f"  {mark} -[{edge.name}]-> {edge.dest}   when {edge.when}"))
        if not edges_from(state):
            lines.append(Text("  (a final state)", style="dim"))
        return lines

    def do_effects(self, arg: str) -> RenderableType:
        index = self.stepper.index
        if self.pos == 0 and index.steps:
            raise CommandError("no effects at the start: step 1 has those asked before it")
        # A run that ended before step 1 (a blocked prompt) has its effects under step 1.
        step = self.pos or 1
        lines = self._effect_lines(step)
        if not lines:
            lines.append(Text(f"step {self.pos} has no effect records"))
        if self.pos == index.steps and index.result_offset is None and index.effects_of(step + 1):
            # A run killed mid-step: the step has no transition, only these.
            lines.append(
                Text(f"step {step + 1}, where the log ends (the run was killed in it), asked for:")
            )
            lines.extend(self._effect_lines(step + 1))
        return Group(*lines)

    def _effect_lines(self, step: int) -> list[RenderableType]:
        index = self.stepper.index
        lines: list[RenderableType] = []
        first = index.first_effect(step)
        for number, record in enumerate(index.effects_of(step), first):
            # The number is the K of `replay --edit-effect K FILE`.
            line = Text(f"#{number:<3} ", style="dim", no_wrap=True, overflow="ellipsis")
            line.append(f"{record['name']:<12} ", style="bold")
            line.append(effect_summary(record))
            lines.append(line)
        return lines

    def do_help(self, arg: str) -> RenderableType:  # type: ignore[override]
        """The whole list, or (pdb's `help CMD`) the line of the command named."""
        wanted = arg.strip()
        rows = [(names, what) for names, what in HELP if not wanted or _names(names, wanted)]
        if not rows:
            raise CommandError(f"no command {wanted!r}; type help for the list")
        table = Table("command", "what it does", box=None)
        for names, what in rows:
            table.add_row(names, what)
        return table

    do_h = do_help

    def do_quit(self, arg: str) -> RenderableType:
        self.done = True
        return Text("")

    do_q = do_exit = do_quit

    def complete_p(self, text: str, *ignored: Any) -> list[str]:
        options = [*FIELDS, "it", *ITERATION_PATHS]
        return [f for f in options if f.startswith(text)]

    complete_pp = complete_print = complete_p

    def complete_break(self, text: str, *ignored: Any) -> list[str]:
        options = [f"state={s}" for s in STATES] + [f"edge={e}" for e in edge_names()]
        options += [f"tool={spec.name}" for spec in self.stepper.specs]
        names = dict.fromkeys([*STATES, *edge_names()])
        return [o for o in [*options, *names, *FIELDS] if o.startswith(text)]

    complete_b = complete_tbreak = complete_break

    def completenames(self, text: str, *ignored: Any) -> list[str]:
        return [name for name in self.get_names_plain() if name.startswith(text)]

    def get_names_plain(self) -> list[str]:
        return sorted(n[3:] for n in dir(self.__class__) if n.startswith("do_"))


def _plain(value: Any) -> Any:
    """`value` as JSON-like data, every field shown (defaults too, unlike the log),
    but messages and content blocks as the converter writes them: their `type`
    tag is what tells a text block from a tool_use, and `attrs.asdict` drops it."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Message):
        return unstructure(value)
    if isinstance(value, ContentBlock):
        return block_to_api(value)
    if attrs.has(type(value)):
        return {k: _plain(v) for k, v in attrs.asdict(value, recurse=False).items()}
    if isinstance(value, list | tuple | Transcript):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return unstructure(value)


def _model_result(result: Any) -> TypeGuard[dict[str, Any]]:
    """Whether a recorded model result has the shape a summary reads. The replay checks
    each as it answers it; one it never reached (a step the run was killed in) may not."""
    if not isinstance(result, dict):
        return False
    events, error = result.get("events") or [], result.get("error")
    listed = isinstance(events, list) and all(isinstance(e, dict) for e in events)
    return listed and (error is None or isinstance(error, dict))


def effect_summary(record: dict[str, Any]) -> str:
    """One line for an effect record: what was asked, and what came back."""
    name, args, result = record["name"], record.get("args"), record.get("result")
    if name == "model" and isinstance(args, dict) and _model_result(result):
        events = result.get("events") or []
        stops = [e.get("stop_reason") for e in events if e.get("event") == "MessageDelta"]
        error = result.get("error")
        calls = [
            b.get("name")
            for e in events
            if e.get("event") == "BlockStop"
            and isinstance(b := e.get("block"), dict)
            and b.get("type") == "tool_use"
        ]
        tools = f", tool_use {', '.join(map(str, calls))}" if calls else ""
        retried = [str(e.get("status")) for e in events if e.get("event") == "ModelRetry"]
        retries = f"retried after {', '.join(retried)}; " if retried else ""
        got = (
            f"error {error.get('kind')}: {error.get('message')}"
            if error
            else f"{len(events)} events, stop_reason {stops[-1] if stops else None}{tools}"
        )
        asked = f"{args.get('messages')} messages, last {_short(args.get('last'), 50)}"
        return f"{asked} → {retries}{got}"
    if name == "tool" and isinstance(args, dict) and isinstance(result, dict):
        flag = " (is_error)" if result.get("is_error") else ""
        call = f"{args.get('name')} {_short(args.get('input'), 40)}"
        return f"{call} → {_short(result.get('content', ''), 50)}{flag}"
    if name == "hooks" and isinstance(result, dict):
        said = {k: v for k, v in result.items() if v} or "no opinion"
        return f"{args} → {_short(said, 70)}"
    asked = f"{record['request']} " if record["request"] else ""
    return f"{asked}→ {_short(result, 80)}"
