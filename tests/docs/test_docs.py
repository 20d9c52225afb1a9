"""The docs say what the code does: links, tables and samples checked against it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from fsm_agent.cli.main import EXIT_CODES, EXIT_ERROR_ANSWER, cli
from fsm_agent.core.config import RunConfig
from fsm_agent.tape.effects import EFFECTS
from tests.conftest import ROOT, SCENARIOS
from tests.support.pty import leave, spawn

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def text(name: str) -> str:
    return (DOCS / name).read_text()


def table(doc: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header line starts with `header`."""
    start = doc.index(header)
    rows = []
    for line in doc[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(), re.M):
        found.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return found


def normal(line: str) -> str:
    """A line without colour, ids or durations."""
    line = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line).rstrip()
    line = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "ID", line)
    return re.sub(r"\(\d+\.\d\ds\)", "(TIME)", line)


def shows(printed: str, line: str) -> bool:
    """The same line, or cut to the terminal's width with `…` (a long tmp_path)."""
    head, cut, tail = printed.partition("…")
    return printed == line or bool(cut and line.startswith(head) and line.endswith(tail))


def assert_shown(doc: list[str], output: str, workspace: Path, shown_as: str) -> None:
    """Every line the docs show (their `shown_as` the real workspace) was printed, in order."""
    seen = [normal(line) for line in re.split(r"\r\n|\r|\n", output)]
    at = 0
    for line in (normal(line.replace(shown_as, str(workspace))) for line in doc):
        found = [i for i in range(at, len(seen)) if shows(seen[i], line)]
        assert found, f"not shown (in this order): {line!r}"
        at = found[0] + 1


def test_every_link_between_the_docs_resolves() -> None:
    for page in PAGES:
        prose = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for link in re.findall(r"\]\(([^)\s]+)\)", prose):
            if link.startswith(("http://", "https://")):
                continue
            path, _, fragment = link.partition("#")
            target = (page.parent / path).resolve() if path else page
            assert target.exists(), f"{page.name}: {link}"
            if fragment and target.suffix == ".md":
                assert fragment in anchors(target), f"{page.name}: {link}"


def test_the_module_tables_name_every_module_in_its_layer() -> None:
    """docs/architecture.md has a table per layer, and each names the layer's modules."""
    page = text("architecture.md")
    package = ROOT / "fsm_agent"
    layers = sorted(p.name for p in package.iterdir() if (p / "__init__.py").exists())
    headed = re.findall(r"^### `(\w+)/`", page, re.M)
    assert sorted(headed) == layers
    for layer in layers:
        section = page.split(f"### `{layer}/`", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
        named = set(re.findall(r"^\| `([\w.]+\.py)` \|", section, re.M))
        modules = {p.name for p in (package / layer).glob("*.py")}
        modules -= {"__init__.py"} - named
        assert named == modules, layer
    flat = {p.name for p in package.glob("*.py")}
    assert flat == {"__init__.py", "pytest_plugin.py"}, "only the face and the plugin stay flat"


def command(name: str) -> click.Command:
    """A subcommand as click loads it (the group loads each lazily)."""
    found = cli.get_command(click.Context(cli), name)
    assert found is not None, name
    return found


def test_the_summary_lists_every_command() -> None:
    summary = text("cli.md").split("```")[1]
    commands = set(cli.list_commands(click.Context(cli)))
    assert set(re.findall(r"^fsm-agent (\w+)", summary, re.M)) == commands


def options_of(command: click.Command) -> set[str]:
    return {
        name
        for param in command.params
        if isinstance(param, click.Option)
        for name in param.opts
        if name.startswith("--") and name != "--help"
    }


def test_the_run_options_table_is_the_run_command_s() -> None:
    rows = table(text("cli.md"), "| option | meaning |")
    documented = {name for row in rows for name in re.findall(r"--[\w-]+", row[0])}
    documented |= {name for row in rows for name in re.findall(r"`(--\w+)`", row[1])}
    assert documented == options_of(command("run"))


def test_every_option_of_the_other_commands_is_documented() -> None:
    """`chat` takes `run`'s options but the output's; the others' are in cli.md or replay.md."""
    output = {"--output-format", "--include-partial-messages"}
    assert options_of(command("chat")) == options_of(command("run")) - output
    docs = text("cli.md") + text("replay.md")
    for name in ("sessions", "replay", "coverage", "graph"):
        for option in options_of(command(name)):
            assert re.search(rf"`[^`]*{option}\b", docs), f"{name} {option}"


def test_the_environment_table_names_every_variable_the_code_reads_or_sets() -> None:
    rows = table(text("cli.md"), "| variable | meaning |")
    documented = {row[0].strip("`") for row in rows}
    code = "\n".join(p.read_text() for p in (ROOT / "fsm_agent").rglob("*.py"))
    used = set(re.findall(r"[\"']((?:ANTHROPIC|BASH|CLAUDE|FSM_AGENT)_[A-Z_]+)[\"']", code))
    assert documented == used


def test_the_exit_code_table_is_the_code_s() -> None:
    rows = table(text("cli.md"), "| code | meaning |")
    documented = {
        reason: int(code)
        for code, meaning in rows
        if int(code) != EXIT_ERROR_ANSWER  # `completed` with an error answer
        for reason in re.findall(r"`(\w+)`", meaning.split(":")[0])
        if reason in EXIT_CODES
    }
    assert documented == EXIT_CODES
    assert EXIT_ERROR_ANSWER in {int(code) for code, _ in rows}


def test_the_result_table_has_every_way_a_run_ends(tmp_path: Path) -> None:
    rows = table(text("cli.md"), "| Terminal reason | `subtype` | `is_error` | exit code |")
    ends = {row[0].split("`")[1]: int(row[3]) for row in rows if "API error" not in row[0]}
    assert ends == EXIT_CODES


def test_the_json_result_sample_has_the_fields_a_run_prints(tmp_path: Path) -> None:
    """cli.md's sample has every field, README's abridged one some, in the printed order."""
    proc = CliRunner().invoke(
        cli,
        [
            *("run", "--scripted", str(SCENARIOS / "fix_bug.json")),
            *("--cwd", str(tmp_path), "--output-format", "json"),
        ],
    )
    assert proc.exit_code == 0, proc.output
    printed = json.loads(proc.output)
    sample = re.search(r"```json\n(\{\n  \"type\": \"result\".*?)\n```", text("cli.md"), re.S)
    assert sample is not None
    keys = re.findall(r'^  "(\w+)":', sample.group(1), re.M)
    assert keys == list(printed)
    abridged = re.search(
        r"```json\n(\{\n  \"type\": \"result\".*?)\n```", (ROOT / "README.md").read_text(), re.S
    )
    assert abridged is not None
    shown = json.loads(abridged.group(1).replace('"…"', "null"))
    remaining = iter(printed)
    assert all(key in remaining for key in shown), "README's keys, in the printed order"
    for key in ("subtype", "is_error", "num_turns", "result", "stop_reason", "terminal_reason"):
        assert shown[key] == printed[key], key
    assert (shown["total_cost_usd"], shown["usage"], shown["model"]) == (
        printed["total_cost_usd"],
        printed["usage"],
        printed["model"],
    )


def test_the_stream_json_sample_is_what_a_run_prints(tmp_path: Path) -> None:
    """cli.md's stream-json lines, from tool_round.json in /home/me/demo: the same keys
    in the same order and the same values, but ids and what the sample elides (`…`)."""
    sample = re.search(
        r"```\n(\{\"type\":\"system\",\"subtype\":\"init\".*?)\n…", text("cli.md"), re.S
    )
    assert sample is not None
    workspace = tmp_path / "demo"
    workspace.mkdir()
    proc = CliRunner().invoke(
        cli,
        [
            *("run", "--scripted", str(SCENARIOS / "tool_round.json")),
            *("--cwd", str(workspace), "--output-format", "stream-json"),
        ],
    )
    assert proc.exit_code == 0, proc.output
    printed = [json.loads(line) for line in proc.output.splitlines()]

    def same(shown: object, real: object) -> bool:
        if shown == "/home/me/demo":
            return real == str(workspace)
        if (isinstance(shown, str) and "…" in shown) or (shown is None and isinstance(real, dict)):
            return True
        if isinstance(shown, dict) and isinstance(real, dict):
            return list(shown) == list(real) and all(same(shown[k], real[k]) for k in shown)
        if isinstance(shown, list) and isinstance(real, list):
            return len(shown) == len(real) and all(map(same, shown, real))
        return shown == real

    for shown, real in zip(sample.group(1).splitlines(), printed, strict=False):
        assert same(json.loads(shown.replace("{…}", "null")), real), shown


def test_the_coverage_sample_is_what_coverage_prints() -> None:
    sample = re.search(
        r"\$ fsm-agent coverage replays/\*\.jsonl\n(.*?)```", text("replay.md"), re.S
    )
    assert sample is not None
    logs = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "replays").glob("*.jsonl"))
    proc = CliRunner().invoke(cli, ["coverage", *logs])
    assert proc.exit_code == 0, proc.output
    printed = proc.output.splitlines()
    for line in sample.group(1).splitlines():
        if line and line != "…":
            assert line in printed


def test_the_scenario_tables_name_every_key_a_scenario_takes() -> None:
    """scenarios.md's two tables, its `config` keys and its hook outcome's, against the
    classes a scenario is read into (a key they lack is refused, one they add is unknown)."""
    import attrs

    from fsm_agent.hooks.outcomes import HookOutcome
    from fsm_agent.live.scripted import Scenario, ScenarioConfig, ScriptedTurn

    def keys(cls: type) -> set[str]:
        return {f.name for f in attrs.fields(cls)}

    doc = text("scenarios.md")
    top = {row[0].strip("`"): row[1] for row in table(doc, "| key | meaning |")}
    assert set(top) == keys(Scenario)
    turn = table(doc.split("## A turn")[1], "| key | meaning |")
    assert {row[0].strip("`") for row in turn} == keys(ScriptedTurn)
    assert keys(ScenarioConfig) <= set(re.findall(r"`(\w+)`", top["config"]))
    outcome = top["hooks"].split("An outcome has", 1)[1]
    assert keys(HookOutcome) <= set(re.findall(r"`(\w+)`", outcome))


def test_the_autocompact_threshold_example_is_the_formula_s() -> None:
    example = re.search(r"([\d,]+) on a\s+(\d+)k\s+window", text("scenarios.md"))
    assert example is not None
    window = int(example.group(2)) * 1000
    threshold = int(example.group(1).replace(",", ""))
    assert RunConfig(context_window=window).autocompact_threshold == threshold


def test_the_chat_transcript_is_what_a_terminal_shows(tmp_path: Path) -> None:
    """docs/cli.md's chat, typed as shown, in a pseudo-terminal, with docs/demo_chat.json."""
    import io

    shown = re.search(
        r"```\n\$ fsm-agent chat --scripted demo_chat.json\n(.*?)\n›\n\$\n```", text("cli.md"), re.S
    )
    assert shown is not None
    workspace = tmp_path / "demo2"
    workspace.mkdir()
    (workspace / "average.py").write_text(
        "def average(xs):\n    return sum(xs) / (len(xs) + 1)\n\n\nprint(average([2, 4, 9]))\n"
    )
    child = spawn(["chat", "--scripted", str(DOCS / "demo_chat.json")], workspace)
    child.logfile_read = screen = io.StringIO()
    child.expect("› ")
    child.sendline("why does average.py print the wrong number?")
    child.expect("completed")
    child.expect("› ")
    child.sendline("fix it")
    child.expect("Waiting for the model")
    child.sendintr()
    child.expect("aborted_streaming")
    child.expect("› ")
    child.sendline("fix it, then stop")
    child.expect("completed")
    child.expect("› ")
    assert leave(child) == 0
    assert "/ len(xs)\n" in (workspace / "average.py").read_text()

    doc = [line for line in shown.group(1).splitlines() if not line.startswith("⠸")]
    assert_shown(doc, screen.getvalue(), workspace, "/home/me/demo2")


def test_the_piped_run_samples_are_what_a_run_prints(tmp_path: Path) -> None:
    """README's and cli.md's `fsm-agent run --scripted replays/scenarios/fix_bug.json`, piped."""
    samples = {
        "/tmp/demo": re.search(
            r"```text\n\$ fsm-agent run --scripted \S+ --cwd /tmp/demo\n(.*?)```",
            (ROOT / "README.md").read_text(),
            re.S,
        ),
        "/home/me/demo": re.search(
            r"`fsm-agent run --scripted replays/scenarios/fix_bug.json --cwd /home/me/demo \| cat`"
            r"[^\n]*:\n\n```\n(.*?)```",
            text("cli.md"),
            re.S,
        ),
    }
    scripted = ("--scripted", str(SCENARIOS / "fix_bug.json"))
    for shown_as, sample in samples.items():
        assert sample is not None, shown_as
        workspace = tmp_path / shown_as.strip("/").replace("/", "-")
        workspace.mkdir()
        proc = subprocess.run(
            [*(sys.executable, "-m", "fsm_agent.cli", "run"), *scripted, "--cwd", str(workspace)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert_shown(sample.group(1).splitlines(), proc.stdout, workspace, shown_as)


def test_every_file_the_docs_name_is_there() -> None:
    for page in PAGES:
        for name in re.findall(
            r"`((?:fsm_agent|tools|tests|docs|replays)/[\w/.-]+\.\w+)`", page.read_text()
        ):
            assert (ROOT / name).exists(), f"{page.name}: {name}"


def test_no_page_sends_the_reader_to_a_file_the_repository_lacks() -> None:
    """A clone is all a reader has: a project file named in capitals (`DESIGN.md`) must
    be in it; CLAUDE.md and the like are the user's files, named as Claude Code names them."""
    users = {"CLAUDE.md", "CLAUDE.local.md"}
    for page in PAGES:
        for name in set(re.findall(r"\b[A-Z][A-Z_]+(?:\.local)?\.md\b", page.read_text())) - users:
            assert (ROOT / name).exists(), f"{page.name}: {name}"


def test_the_hook_samples_of_permissions_and_hooks_run_as_written(tmp_path: Path) -> None:
    """The settings sample's hook command, the CLAUDE_ENV_FILE line and the
    PermissionRequest answer, put together in one run without a terminal."""
    doc = text("permissions-and-hooks.md")
    settings = re.search(r"```json\n(\{\"hooks\": \{\"PreToolUse\".*?)\n```", doc, re.S)
    env_line = re.search(r"```sh\n\s*(echo .*CLAUDE_ENV_FILE\")\n", doc)
    answer = re.search(r"```json\n(\{\"hookSpecificOutput\".*?)\n```", doc, re.S)
    assert settings is not None and env_line is not None and answer is not None
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (home / "tools" / "bin").mkdir(parents=True)
    npm = home / "tools" / "bin" / "npm"
    npm.write_text('#!/bin/sh\necho "npm $* ($NODE_ENV)"\n')
    hooks = workspace / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "guard.sh").write_text('#!/bin/sh\ncat > "$CLAUDE_PROJECT_DIR/guarded.json"\n')
    (hooks / "answer.sh").write_text(f"#!/bin/sh\ncat <<'EOF'\n{answer.group(1)}\nEOF\n")
    for script in (npm, hooks / "guard.sh", hooks / "answer.sh"):
        script.chmod(0o755)
    config = json.loads(settings.group(1))
    config["hooks"]["SessionStart"] = [
        {"hooks": [{"type": "command", "command": env_line.group(1)}]}
    ]
    config["hooks"]["PermissionRequest"] = [
        {"hooks": [{"type": "command", "command": "./.claude/hooks/answer.sh"}]}
    ]
    (workspace / ".claude" / "settings.json").write_text(json.dumps(config))
    bash = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "npm test"}}
    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps({"prompt": "test", "turns": [{"content": [bash]}, {"content": "ok"}]})
    )
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "fsm_agent.cli", "run", "--scripted", str(scenario)),
            *("--cwd", str(workspace), "--output-format", "json"),
        ],
        env={**os.environ, "HOME": str(home)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((workspace / "guarded.json").read_text())["tool_name"] == "Bash"
    log = Path(json.loads(proc.stdout)["log"]).read_text().splitlines()
    (ran,) = [json.loads(r) for r in log if '"name":"tool"' in r]
    assert ran["args"]["input"] == {"command": "npm test -- --ci"}
    assert ran["result"]["content"] == "npm test -- --ci (development)"


def test_the_benchmark_table_lists_every_benchmark() -> None:
    rows = table((ROOT / "README.md").read_text(), "| script | measures |")
    listed = {row[0].strip("`") for row in rows}
    assert listed == {f"tools/{p.name}" for p in (ROOT / "tools").glob("bench_*.py")}


def test_the_debugger_table_names_every_command_the_debugger_has() -> None:
    from fsm_agent.cli.debugger import HELP

    debugger = text("replay.md").split("## The debugger")[1]
    rows = table(debugger, "| command | what it does |")
    documented = {code.split()[0] for row in rows for code in re.findall(r"`([^`]+)`", row[0])}
    has = {part.split()[0] for names, _ in HELP for part in names.split(", ")}
    assert documented == has


def test_every_notice_subtype_stream_json_prints_is_documented(tmp_path: Path) -> None:
    rows = table(text("cli.md"), "| `type` | when | fields |")
    documented = {
        subtype
        for row in rows
        if row[0].startswith("`system`")
        for subtype in re.findall(r"\w+", row[0])
    } - {"system", "subtype"}
    printed = set()
    for name in (
        *("autocompact", "collapse_drain", "reactive_compact", "model_fallback"),
        *("max_output_tokens", "stop_hook_blocking", "token_budget"),
    ):
        workspace = tmp_path / name
        workspace.mkdir()
        proc = CliRunner().invoke(
            cli,
            [
                *("run", "--scripted", str(SCENARIOS / f"{name}.json")),
                *("--cwd", str(workspace), "--output-format", "stream-json"),
            ],
        )
        lines = [json.loads(line) for line in proc.output.splitlines()]
        printed |= {line["subtype"] for line in lines if line["type"] == "system"}
    assert printed <= documented


def test_scenario_runs_in_one_test_are_numbered_by_their_place(fsm_run, tmp_path: Path) -> None:
    """docs/testing.md: the second run is NAME-2, whatever its name."""
    fsm_run(str(SCENARIOS / "tool_round.json"))
    inline = fsm_run({"prompt": "hi", "turns": [{"content": "Hello."}]})
    assert inline.log == tmp_path / "scenario-2.jsonl"
    assert (tmp_path / "workspace-2").is_dir()


def test_the_effect_table_schema_and_recorder_name_the_same_effects() -> None:
    rows = table(text("log-format.md"), "| `name` | `request` | `args` | `result` |")
    documented = {row[0].strip("`") for row in rows}
    schema = json.loads(text("log-format.schema.json"))
    (effect,) = [v for v in schema["oneOf"] if v["title"] == "effect"]
    recorded = {effect.name for effect in EFFECTS}
    assert documented == set(effect["properties"]["name"]["enum"]) == recorded


def test_every_shipped_log_and_the_rarer_records_match_the_schema(tmp_path: Path) -> None:
    """Every replays/*.jsonl, and a log with a stored blob, a CLAUDE.md found on a read,
    a question with no terminal to ask, and a resumed run's parent and read files."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(json.loads(text("log-format.schema.json")))
    scenario = tmp_path / "rare.json"
    read = {"type": "tool_use", "name": "Read", "input": {"file_path": "sub/big.txt"}}
    outside = {"file_path": str(tmp_path / "outside.txt"), "content": "x"}
    write = {"type": "tool_use", "id": "t2", "name": "Write", "input": outside}
    scenario.write_text(
        json.dumps(
            {
                "prompt": "go",
                "turns": [
                    {"content": [{**read, "id": "t1"}]},
                    {"content": [write]},
                    {"content": "done"},
                    {"content": "again"},
                ],
            }
        )
    )
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "sub" / "big.txt").write_text(("y" * 45 + "\n") * 2000)  # under 25,000 tokens
    (workspace / "sub" / "CLAUDE.md").write_text("Notes for sub.\n")
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    runner = CliRunner()
    for args in (
        ["run", "--scripted", str(scenario), "--cwd", str(workspace), "--log", str(first)],
        ["run", "--resume", str(first), "more", "--scripted", str(scenario), "--log", str(second)],
    ):
        assert runner.invoke(cli, args).exit_code == 0
    names = set()
    for log in [first, second, *sorted((ROOT / "replays").glob("*.jsonl"))]:
        for number, line in enumerate(log.read_text().splitlines(), 1):
            record = json.loads(line)
            errors = [e.message for e in validator.iter_errors(record)]
            assert not errors, f"{log.name}:{number}: {errors}"
            names.add(record.get("name"))
    assert {"store_blob", "memory", "ask_permission"} <= names
    header = json.loads(second.read_text().splitlines()[0])
    assert header["parent"]["log"] == str(first)
    rows = [json.loads(line) for line in second.read_text().splitlines()]
    assert "read_files" in next(r for r in rows if r.get("t") == "start")
