"""A session log's header: written at a run's start, read back by whatever replays it.

The header holds everything a replay needs besides the records: the run's
configuration, the tool definitions the model was sent, and the fingerprint of
the machine that wrote it. Reading it needs the codec and the machine, which
`fsm_agent.tape.log` (the file format alone, enough for `replay --path`) does not.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from fsm_agent.core.codec import CodecError, structure, unstructure
from fsm_agent.core.config import RunConfig
from fsm_agent.core.model import ToolSpec
from fsm_agent.core.validation import SchemaError, check_schema
from fsm_agent.engine.machine import EDGES
from fsm_agent.tape.log import LogError, SessionLog
from fsm_agent.tape.old_logs import (
    output_settings,
    with_cut_calls_dropped,
    with_home,
    with_inputs_as_sent,
    with_output_cap,
)


def machine_fingerprint() -> str:
    """A digest of the edge table, so a replay can tell when the machine changed."""
    rows = "\n".join(f"{e.source}|{e.name}|{e.dest}|{e.when}" for e in EDGES)
    return hashlib.sha256(rows.encode()).hexdigest()[:16]


def other_machine_note(log: SessionLog) -> str | None:
    """A note when the log's edge table is not this machine's: a likely reason it diverged.
    `replay --check` and the debugger end a divergence report with it."""
    recorded, ours = log.header["fingerprint"], machine_fingerprint()
    if recorded == ours:
        return None
    return (
        "  note: the log was written by another machine: its edge table's fingerprint is "
        f"{recorded}, this one's {ours}"
    )


def session_header(
    session_id: str, config: RunConfig, specs: Sequence[ToolSpec], **extra: Any
) -> dict[str, Any]:
    """A new log's header: who, when, which machine, and everything a replay needs."""
    return {
        "session_id": session_id,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "fingerprint": machine_fingerprint(),
        "config": {**unstructure(config), **output_settings(config)},
        "tools": unstructure(list(specs)),
        **extra,
    }


def config_of(log: SessionLog, header: Mapping[str, Any] | None = None) -> RunConfig:
    """The recorded run's configuration; a header that does not hold one is a `LogError`.
    `header`: the header as a later run of the log has it (`ReplayTape.header`)."""
    recorded = (log.header if header is None else header).get("config", {})
    if isinstance(recorded, dict):
        recorded = with_inputs_as_sent(with_cut_calls_dropped(with_output_cap(recorded)))
    return with_home(_from_header_value(log, "config", recorded, RunConfig))


def tools_of(
    log: SessionLog, *, checked: bool = True, header: Mapping[str, Any] | None = None
) -> list[ToolSpec]:
    """The tool definitions the recorded run sent the model. `checked`: a schema that
    does not compile is a `LogError` now, not a traceback when the model first calls
    the tool; unchecked, the caller turns a `SchemaError` into one (`header_tools_error`)."""
    specs: list[ToolSpec] = _from_header(log, "tools", [], list[ToolSpec], header)
    if checked:
        for spec in specs:
            try:
                check_schema(spec.name, spec.input_schema)
            except SchemaError as exc:
                raise header_tools_error(log, exc) from None
    return specs


def header_tools_error(log: SessionLog, exc: Exception) -> LogError:
    return LogError(f"{log.path}:1: the header's tools: {exc}")


def _from_header(
    log: SessionLog, key: str, default: Any, cls: Any, header: Mapping[str, Any] | None
) -> Any:
    return _from_header_value(
        log, key, (log.header if header is None else header).get(key, default), cls
    )


def _from_header_value(log: SessionLog, key: str, value: Any, cls: Any) -> Any:
    try:
        return structure(value, cls)
    except CodecError as exc:
        raise LogError(f"{log.path}:1: the header's {key}: {exc}") from None
