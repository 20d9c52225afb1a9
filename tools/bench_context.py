"""Context preprocessing cost per iteration as the history grows: it must stay flat.

For histories of 10, 1,000 and 10,000 messages (tool rounds of ~100 tokens,
so the largest is about a million tokens), runs the real `preprocess` phase
for a series of iterations, each after a new tool round is appended the way
`next_turn` appends it, and prints the median µs per iteration:

- `idle`: a window large enough that no level fires (accounting only);
- `microcompact`: the last response's usage is past the microcompact
  threshold, so every iteration clears the result that just became old.

Flat means the 10,000-message figure is close to the 10-message one: the
count walks back only to the last response and microcompact stops at the
first result it had already cleared.

    python tools/bench_context.py [ITERATIONS]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from attrs import evolve

from fsm_agent.context.levels import estimate_all
from fsm_agent.core.config import RunConfig
from fsm_agent.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage, user
from fsm_agent.core.transcript import Transcript
from fsm_agent.engine.driver import fresh_iteration, initial_state
from fsm_agent.engine.phases import Run
from fsm_agent.engine.preprocess import preprocess
from fsm_agent.engine.state import LoopState
from fsm_agent.live.effects import LiveEffects
from fsm_agent.live.scripted import Scenario, ScriptedModel

SIZES = (10, 1_000, 10_000)
RESULT = "line of tool output that is about this long, " * 12


def tool_round(n: int, context_tokens: int) -> tuple[Message, Message]:
    tid = f"toolu_{n:06d}"
    assistant = Message(
        "assistant",
        (TextBlock(f"Reading part {n}."), ToolUseBlock(tid, "Read", {"file_path": f"f{n}.txt"})),
        usage=Usage(input_tokens=context_tokens),
    )
    return assistant, Message("user", (ToolResultBlock(tid, RESULT),))


def history(size: int, context_tokens: int) -> Transcript:
    items: list[Message] = [user("Read every part.")]
    n = 0
    while len(items) < size:
        items.extend(tool_round(n, context_tokens))
        n += 1
    return Transcript.of(items[:size])


async def per_iteration(
    config: RunConfig, messages: Transcript, context_tokens: int, iterations: int
) -> float:
    effects = LiveEffects(ScriptedModel(Scenario.parse({"turns": []})), {})
    run = Run(config, effects, (), lambda event: None, "bench")
    state: LoopState = evolve(initial_state([], config), messages=messages)
    it, _ = await preprocess(run, state, fresh_iteration(state))
    state = evolve(state, messages=it.messages_for_query)
    spent: list[float] = []
    for i in range(iterations):
        added = tool_round(1_000_000 + i, context_tokens)
        state = evolve(state, messages=state.messages.extend(added))
        started = time.perf_counter()
        it, _ = await preprocess(run, state, fresh_iteration(state))
        spent.append(time.perf_counter() - started)
        state = evolve(state, messages=it.messages_for_query)
    return statistics.median(spent) * 1e6


def main() -> None:
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    idle = RunConfig(context_window=100_000_000, autocompact=False)
    busy = RunConfig(context_window=2_000_000, autocompact=False)
    print(f"{'messages':>9} {'~tokens':>10} {'idle µs/it':>11} {'microcompact µs/it':>19}")
    print(f"{'':>9} {'':>10} {'(median)':>11} {'(median)':>19}")
    rows = []
    for size in SIZES:
        loaded_tokens = int(0.7 * busy.effective_window)
        quiet = history(size, 1_000)
        loaded = history(size, loaded_tokens)
        a = asyncio.run(per_iteration(idle, quiet, 1_000, iterations))
        b = asyncio.run(per_iteration(busy, loaded, loaded_tokens, iterations))
        rows.append((a, b))
        print(f"{size:>9,} {estimate_all(quiet):>10,} {a:>11.1f} {b:>19.1f}")
    (a0, b0), (a1, b1) = rows[0], rows[-1]
    ratio = f"idle {a1 / a0:.2f}, microcompact {b1 / b0:.2f}"
    print(f"ratio {SIZES[-1]:,} / {SIZES[0]:,} messages (1,000x the history): {ratio}")


if __name__ == "__main__":
    main()
