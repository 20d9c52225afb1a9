"""The replay viewer's page: one HTML file with its style, script and data inline.

Nothing is fetched, so the file opens offline, from disk, in any current browser.
The data is JSON in a `<script type="application/json">` element, every `<` in it
written `\\u003c` so no string in the log can end the element early.
"""

from __future__ import annotations

import html
import json
from importlib.resources import files
from typing import Any

_HERE = files(__package__ or "fsm_agent.cli")

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style></head>
<body>
<header><b id="name"></b><span id="summary"></span><span id="where"></span>
<input id="search" placeholder="/ search messages and tool output" autocomplete="off">
<span id="found"></span><input id="goto" placeholder="go to step" size="10">
<span class="hint">←/→ step · ↑/↓ turn · / search · g go to step</span></header>
<div id="wrap"><div id="timeline"></div>
<div id="main"><div id="head"></div><div class="top">
<div class="card" id="machine"><h3>the machine, and the path taken</h3></div>
<div class="card" id="chart"><h3>tokens and cost</h3></div></div>
<div id="step"></div></div></div>
<script type="application/json" id="data">{data}</script>
<script>{js}</script>
</body></html>
"""


def page(data: dict[str, Any]) -> str:
    """The whole page for `fsm_agent.tape.view.view_data`'s data."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return _PAGE.format(
        title=html.escape(f"{data.get('log', '')}: fsm-agent replay viewer"),
        css=(_HERE / "view_page.css").read_text(encoding="utf-8"),
        js=(_HERE / "view_page.js").read_text(encoding="utf-8"),
        data=text.replace("<", "\\u003c"),
    )
