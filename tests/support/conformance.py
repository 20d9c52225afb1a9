"""The differential conformance runner: one case's model turns served to fsm-agent and to
the real Claude Code CLI, each in a fresh identical workspace and HOME, and what each did
compared aspect by aspect.

A case is data (`Case`): a prompt, the model's turns, the workspace's files, project
settings and hook scripts, the flags both commands get, and a line saying why it exists.
`observe` runs one side and reduces what it did to comparable shapes; `compare` puts
the two side by side. What the runner normalises before comparing, and why:

- paths: each side has its own tmp tree, so the workspace, HOME and the tree around
  them are written `<ws>`, `<home>`, `<root>` wherever they occur;
- requests: the system prompt, the tool list and their descriptions are each tool's own
  wording and may differ. Of each message only its role and block types are kept, with
  tool_use ids and each tool_result's `tool_use_id` and `is_error`; consecutive text
  blocks count as one (each adds its `<system-reminder>` context in its own blocks) and
  consecutive messages of one role are merged (Claude Code sends its context and the
  prompt as one user message, fsm-agent as two). Claude Code's own `system`-role
  context message in `messages` is dropped; `max_tokens` is an aspect of its own;
- ids, durations, costs, usage and session ids are not compared;
- the outcome compares the exit code as zero or not: fsm-agent's exit code names the
  terminal reason (10-19, docs/cli.md), Claude Code's is 1 for every failure;
- stream-json: fsm-agent's `transition` lines (the machine's edges) and Claude Code's
  `system` lines other than `init` (retries, hook progress, status) are each tool's own;
- hook payloads: `session_id` and `transcript_path` (each tool's own transcript) are
  dropped, and `effort` (Claude Code's reasoning-effort setting, which fsm-agent does not
  have); a `prompt_id` (a fresh UUID per prompt on both sides) is written `<prompt_id>`, a
  `duration_ms` `<ms>`;
  the rest compared key by key, in order.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tests.conftest import ROOT
from tests.support.cli import MODEL, fsm_argv
from tests.support.messages_server import (
    JsonReply,
    MessagesServer,
    PageReply,
    Sse,
    StreamReply,
    message,
)
from tests.support.real_claude import claude_binary, claude_env, trusted_home

ASPECTS = (
    "outcome", "requests", "workspace", "tool_errors", "max_tokens", "tool_text", "hooks", "output"
)  # fmt: skip
"""What is compared, in the report's column order."""
MUST_AGREE = ("outcome", "requests", "workspace", "tool_errors")
"""The aspects on which every case must agree (the issue's item 4); the others may
differ only with a reason the report gives."""
OPEN_EVERYWHERE: dict[str, str] = {}
"""Differences every case shows, with the reason, unless a case gives its own."""
OUTSIDE_FILES = {"notes.txt": "outside the workspace\n", "keep/data.txt": "sentinel\n"}
"""The sentinel tree next to the workspace: no case may change it."""
TIMEOUT_S = 120


@dataclass(frozen=True)
class Turn:
    """One model reply: API-shaped `blocks` (a tool_use without an id gets the next
    `toolu_NN`), and optionally a fault: `cut_in_tool_json` drops the connection in the
    middle of the last tool_use's input, `no_message_stop` ends the body cleanly before
    `message_stop`, `error_event` sends an overloaded `event: error` after the first
    block started."""

    blocks: tuple[Mapping[str, Any], ...]
    stop_reason: str | None = None
    fault: str | None = None


Step = Turn | JsonReply | PageReply


def say(text: str, **kw: Any) -> Turn:
    return Turn(({"type": "text", "text": text},), **kw)


def use(*calls: tuple[str, Mapping[str, Any]], text: str = "", **kw: Any) -> Turn:
    """A turn of tool calls, each (tool name, input); `{ws}` and `{outside}` in an
    input's strings become each side's paths."""
    blocks: list[Mapping[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", "name": n, "input": dict(i)} for n, i in calls]
    return Turn(tuple(blocks), **kw)


def raw_tool(name: str, input_json: str, **kw: Any) -> Turn:
    """A tool call whose input JSON is sent verbatim, valid or not."""
    return Turn(({"type": "tool_use", "name": name, "input_json": input_json},), **kw)


@dataclass(frozen=True)
class Case:
    """One conformance case. `known` maps an aspect to the reason its difference is
    deliberate (or owned by another issue); `xfail` names the issue that owns a
    must-agree difference not yet closed."""

    name: str
    why: str
    prompt: str
    turns: tuple[Step, ...]
    files: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] | None = None
    hooks: Mapping[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    output: str = "stream-json"
    text: tuple[str, ...] = ()
    known: Mapping[str, str] = field(default_factory=dict)
    xfail: str | None = None
    trusted: bool = True
    """Whether HOME's `.claude.json` has the workspace's trust dialog accepted; an
    untrusted workspace's `.claude/settings.json` may not widen what runs."""
    local_settings: Mapping[str, Any] | None = None
    """`.claude/settings.local.json`, the user's own file, honoured untrusted too."""
    outside: Mapping[str, str] = field(default_factory=dict)
    """Files beside `OUTSIDE_FILES` in the sentinel tree (a red-team case's secret)."""
    links: Mapping[str, str] = field(default_factory=dict)
    """Symlinks made in the workspace, each to its target (`{outside}` allowed)."""
    hard_links: Mapping[str, str] = field(default_factory=dict)
    """Hard links made in the workspace, each to an existing file (`{outside}` allowed)."""


# --- materialising a case for one side --------------------------------------------------


def _subst(value: Any, paths: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for key, path in paths.items():
            value = value.replace("{" + key + "}", path)
        return value
    if isinstance(value, Mapping):
        return {k: _subst(v, paths) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_subst(v, paths) for v in value]
    return value


def _fault_options(events: Sequence[Sse], fault: str | None) -> dict[str, Any]:
    if fault is None:
        return {}
    if fault == "cut_in_tool_json":
        deltas = [i for i, e in enumerate(events) if e.data.get("delta", {}).get("partial_json")]
        return {"cut_after": deltas[len(deltas) // 2]}
    if fault == "no_message_stop":
        return {"end_after": len(events) - 1}
    raise ValueError(f"unknown fault {fault!r}")


def replies(case: Case, paths: Mapping[str, str]) -> list[StreamReply | JsonReply | PageReply]:
    """The case's steps as the server's replies, with this side's paths."""
    out: list[StreamReply | JsonReply | PageReply] = []
    ids = 0
    for n, step in enumerate(case.turns, 1):
        if not isinstance(step, Turn):
            out.append(step)
            continue
        blocks = []
        for block in _subst(step.blocks, paths):
            if block["type"] == "tool_use" and "id" not in block:
                ids += 1
                block = {**block, "id": f"toolu_{ids:02d}"}
            blocks.append(block)
        tools = any(b["type"] == "tool_use" for b in blocks)
        stop = step.stop_reason or ("tool_use" if tools else "end_turn")
        reply = message(blocks, stop_reason=stop, model=MODEL, message_id=f"msg_{n:02d}")
        if step.fault == "error_event":
            body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            reply = replace(reply, events=(*reply.events[:3], Sse("error", body)))
        else:
            reply = replace(reply, **_fault_options(reply.events, step.fault))
        out.append(reply)
    return out


HOOK_PRELUDE = """\
input=$(cat)
printf '%s\\n' "$input" >> "$CONFORMANCE_HOOK_LOG"
"""


def _build(case: Case, root: Path) -> dict[str, Path]:
    ws, home, outside = root / "ws", root / "home", root / "outside"
    for rel, text in {**OUTSIDE_FILES, **case.outside}.items():
        (outside / rel).parent.mkdir(parents=True, exist_ok=True)
        (outside / rel).write_text(text)
    ws.mkdir(parents=True)
    paths = {"ws": str(ws), "outside": str(outside), "root": str(root)}
    for rel, text in case.files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(_subst(text, paths))
    for rel, target in case.links.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).symlink_to(_subst(target, paths))
    for rel, target in case.hard_links.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        os.link(_subst(target, paths), ws / rel)
    if case.settings is not None:
        (ws / ".claude").mkdir(exist_ok=True)
        (ws / ".claude" / "settings.json").write_text(json.dumps(_subst(case.settings, paths)))
    if case.local_settings is not None:
        (ws / ".claude").mkdir(exist_ok=True)
        local = json.dumps(_subst(case.local_settings, paths))
        (ws / ".claude" / "settings.local.json").write_text(local)
    for name, body in case.hooks.items():
        hook = ws / ".claude" / "hooks" / f"{name}.sh"
        hook.parent.mkdir(parents=True, exist_ok=True)
        hook.write_text("#!/bin/sh\n" + HOOK_PRELUDE + body)
        hook.chmod(0o755)
    trusted_home(home, ws, trusted=case.trusted)
    return {"ws": ws, "home": home, "outside": outside, "root": root}


def hook_command(name: str) -> str:
    """The settings' command for the case's hook script `name`."""
    return f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{name}.sh'


def hooks_on(event: str, name: str, matcher: str | None = None) -> dict[str, Any]:
    """A settings `hooks` entry running hook script `name` on `event`."""
    entry: dict[str, Any] = {"hooks": [{"type": "command", "command": hook_command(name)}]}
    if matcher is not None:
        entry["matcher"] = matcher
    return {event: [entry]}


# --- one side's run ---------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    """What one side did, reduced to the compared shapes."""

    exit_code: int
    lines: tuple[dict[str, Any], ...]
    result: dict[str, Any]
    requests: tuple[dict[str, Any], ...]
    workspace: dict[str, str]
    outside_changed: bool
    hooks: tuple[dict[str, Any], ...]
    stderr: str
    transcript: str | None = None
    """The Claude Code transcript the run wrote under its HOME (the real CLI's; fsm-agent's
    goes to `CLAUDE_CONFIG_DIR`), if it wrote exactly one."""


def _snapshot(top: Path) -> dict[str, str]:
    files = {}
    for path in sorted(top.rglob("*")):
        rel = path.relative_to(top)
        if path.is_file() and rel.parts[0] not in (".claude", ".fsm-agent"):
            files[str(rel)] = path.read_text(errors="replace")
    return files


def _argv(side: str, case: Case, where: Mapping[str, Path], server: MessagesServer) -> list[str]:
    fmt = ["--output-format", case.output]
    args = [str(_subst(a, {k: str(v) for k, v in where.items()})) for a in case.args]
    if side == "claude":
        binary = claude_binary()
        assert binary is not None
        verbose = ["--verbose"] if case.output == "stream-json" else []
        return [str(binary), "-p", case.prompt, *fmt, *verbose, "--model", MODEL, *args]
    log = ["--log", str(where["root"] / "session.jsonl")]
    place = ["--base-url", server.url, "--model", MODEL, "--cwd", str(where["ws"])]
    return [*fsm_argv(), "run", case.prompt, *fmt, *log, *place, *args]


def _env(side: str, where: Mapping[str, Path], server: MessagesServer) -> dict[str, str]:
    hook_log = {"CONFORMANCE_HOOK_LOG": str(where["root"] / "hooks.jsonl")}
    if side == "claude":
        return claude_env(server, where["home"], **hook_log)
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TERM")}
    here = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {
        **keep,
        **hook_log,
        "PYTHONPATH": here,  # this checkout's fsm-agent, whatever the venv installed
        "HOME": str(where["home"]),
        "ANTHROPIC_API_KEY": "test-key",
    }


def observe(side: str, case: Case, root: Path) -> Observed:
    """Run `case` on `side` (`fsm` or `claude`) in a fresh tree under `root`."""
    if root.exists():
        shutil.rmtree(root)
    where = _build(case, root)
    names = {k: str(v) for k, v in where.items()}
    before_outside = _snapshot(where["outside"])
    with MessagesServer() as server:
        server.reply(*replies(case, names))
        proc = _run(_argv(side, case, where, server), where["ws"], _env(side, where, server))
        bodies = [b for b in server.bodies() if isinstance(b, dict)]
    norm = _normaliser(where)
    lines = _parse_lines(proc.stdout)
    result = next((x for x in reversed(lines) if x.get("type") == "result"), {})
    hook_log = where["root"] / "hooks.jsonl"
    hooks = _parse_lines(hook_log.read_text()) if hook_log.exists() else []
    return Observed(
        exit_code=proc.returncode,
        lines=tuple(norm(x) for x in lines),
        result=norm(result),
        requests=tuple(_request(norm(b)) for b in bodies),
        workspace=norm(_snapshot(where["ws"])),
        outside_changed=_snapshot(where["outside"]) != before_outside,
        hooks=tuple(norm(_hook(h)) for h in hooks),
        stderr=norm(proc.stderr),
        transcript=_transcript(where["home"]),
    )


def _transcript(home: Path) -> str | None:
    found = sorted(home.glob(".claude/projects/*/*.jsonl"))
    return str(found[0]) if len(found) == 1 else None


def shared_observe(side: str, case: Case, cache: Path) -> Observed:
    """`observe(side, case)` once for every test that asks, in any worker: the first run
    is kept under `cache` (a directory all of a test session's workers share) and the
    others read it, so the real CLI's run of a case serves both its differential test
    and its transcript's import. A lock holds a second asker until the first is done."""
    cache.mkdir(parents=True, exist_ok=True)
    name = f"{side}-{case.name}"
    with open(cache / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        saved = cache / f"{name}.json"
        if saved.exists():
            kept = json.loads(saved.read_text())
            tuples = ("lines", "requests", "hooks")
            return Observed(**{k: tuple(v) if k in tuples else v for k, v in kept.items()})
        obs = observe(side, case, cache / name)
        saved.write_text(json.dumps(asdict(obs)))
        return obs


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The command's run; one that outlives TIMEOUT_S is killed and reported with exit
    code -9, what it printed kept, so a hang is a difference like any other."""
    with subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            return subprocess.CompletedProcess(argv, -9, out, err + "\n(timed out)")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _parse_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _normaliser(where: Mapping[str, Path]) -> Any:
    pairs = [(str(where["ws"]), "<ws>"), (str(where["home"]), "<home>")]
    pairs += [(str(where["outside"]), "<outside>"), (str(where["root"]), "<root>")]

    def norm(value: Any) -> Any:
        if isinstance(value, str):
            for path, name in pairs:
                value = value.replace(path, name)
            return value
        if isinstance(value, Mapping):
            return {k: norm(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [norm(v) for v in value]
        return value

    return norm


def _hook(payload: dict[str, Any]) -> dict[str, Any]:
    kept = {
        k: v for k, v in payload.items() if k not in ("session_id", "transcript_path", "effort")
    }
    if isinstance(kept.get("prompt_id"), str) and len(kept["prompt_id"]) == 36:
        kept["prompt_id"] = "<prompt_id>"
    if isinstance(kept.get("duration_ms"), int):
        kept["duration_ms"] = "<ms>"
    return kept


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def _request(body: Mapping[str, Any]) -> dict[str, Any]:
    """A request's comparable shape (see the module's docstring)."""
    merged: list[dict[str, Any]] = []
    for msg in body.get("messages", []):
        if msg["role"] not in ("user", "assistant"):
            continue
        kept = []
        for block in _blocks(msg["content"]):
            kind = block["type"]
            if kind == "text" and kept and kept[-1] == "text":
                continue
            if kind == "tool_use":
                kept.append(f"tool_use:{block['id']}")
            elif kind == "tool_result":
                error = "error" if block.get("is_error") else "ok"
                kept.append(f"tool_result:{block['tool_use_id']}:{error}")
            else:
                kept.append(kind)
        # Claude Code sends the results of calls that ran together in the order they
        # finished (it varies from run to run): compared in the order of their ids.
        results = iter(sorted(k for k in kept if k.startswith("tool_result:")))
        kept = [next(results) if k.startswith("tool_result:") else k for k in kept]
        if merged and merged[-1]["role"] == msg["role"]:
            last = merged[-1]["blocks"]
            merged[-1]["blocks"] += kept[1:] if kept[:1] == ["text"] == last[-1:] else kept
        else:
            merged.append({"role": msg["role"], "blocks": kept})
    return {
        "model": body.get("model"),
        "max_tokens": body.get("max_tokens"),
        "messages": [f"{m['role']}[{', '.join(m['blocks'])}]" for m in merged],
    }


def _shape(request: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k != "max_tokens"}


# --- the aspects ------------------------------------------------------------------------


def tool_results(obs: Observed) -> list[dict[str, Any]]:
    """Every tool result the -p output showed, in order: id, error or not, text."""
    out = []
    for line in obs.lines:
        if line.get("type") != "user":
            continue
        for block in _blocks(line.get("message", {}).get("content", [])):
            if block.get("type") == "tool_result":
                content = block.get("content")
                if isinstance(content, list):
                    content = "".join(c.get("text", "") for c in content)
                out.append(
                    {
                        "id": block["tool_use_id"],
                        "is_error": bool(block.get("is_error")),
                        "text": content or "",
                    }
                )
    return out


RESULT_KEYS = ("subtype", "is_error", "result", "num_turns", "permission_denials")


def aspects(case: Case, obs: Observed) -> dict[str, Any]:
    """`obs` reduced to one comparable value per aspect."""
    results = tool_results(obs)
    return {
        "outcome": {
            "exit": "zero" if obs.exit_code == 0 else "non-zero",
            "subtype": obs.result.get("subtype"),
            "is_error": obs.result.get("is_error"),
        },
        "requests": [_shape(r) for r in obs.requests],
        "workspace": {"files": obs.workspace, "outside_changed": obs.outside_changed},
        "tool_errors": sorted((r["id"], r["is_error"]) for r in results),  # finish order varies
        "max_tokens": [r["max_tokens"] for r in obs.requests],
        "tool_text": {r["id"]: r["text"] for r in results if r["id"] in case.text},
        "hooks": list(obs.hooks),
        "output": {
            "types": [[x.get("type"), x.get("subtype")] for x in obs.lines if _shown(x)],
            **{
                k: _denials(obs.result.get(k)) if k == "permission_denials" else obs.result.get(k)
                for k in RESULT_KEYS
            },
        },
    }


def _shown(line: Mapping[str, Any]) -> bool:
    """stream-json lines both tools print (see the module's docstring)."""
    if line.get("type") == "transition":
        return False
    return line.get("type") != "system" or line.get("subtype") == "init"


def _denials(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    return [{k: d.get(k) for k in ("tool_name", "tool_use_id", "tool_input")} for d in value]


@dataclass(frozen=True)
class Verdict:
    aspect: str
    agree: bool
    fsm: Any
    claude: Any
    reason: str | None = None

    @property
    def mark(self) -> str:
        if self.agree:
            return "agree"
        return "known" if self.reason else "DIFFERS"


def compare(case: Case, fsm: Observed, claude: Observed) -> list[Verdict]:
    ours, theirs = aspects(case, fsm), aspects(case, claude)
    return [
        Verdict(
            a, ours[a] == theirs[a], ours[a], theirs[a], case.known.get(a, OPEN_EVERYWHERE.get(a))
        )
        for a in ASPECTS
    ]


def run_case(case: Case, tmp: Path) -> list[Verdict]:
    """Both sides of `case`, compared."""
    return compare(case, observe("fsm", case, tmp / "fsm"), observe("claude", case, tmp / "claude"))


def explain(verdicts: Sequence[Verdict]) -> str:
    """The differences, for a failing test's message."""
    lines = []
    for v in verdicts:
        if not v.agree:
            lines.append(f"{v.aspect} ({v.mark}):")
            lines.append(f"  fsm-agent:   {json.dumps(v.fsm, default=str)[:1500]}")
            lines.append(f"  Claude Code: {json.dumps(v.claude, default=str)[:1500]}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a developer's probe: one case by name
    from tests.support.conformance_cases import CASES

    chosen = [c for c in CASES if c.name in sys.argv[1:]]
    for c in chosen:
        print(c.name, "\n" + explain(run_case(c, Path("/tmp") / "conformance" / c.name)))
