"""A workspace the user trusts, as accepting Claude Code's trust dialog marks it: only a
trusted workspace's `.claude/settings.json` may allow tools or add directories, so a
test whose workspace settings allow something trusts it first."""

from __future__ import annotations

import json
from pathlib import Path


def trust(home: Path, workspace: Path) -> Path:
    """Mark `workspace` trusted in `home`'s `.claude.json` (keeping what the file holds)
    as the dialog does; returns `home`."""
    trust_in(home / ".claude.json", workspace)
    return home


def trust_in(config_file: Path, workspace: Path) -> None:
    """Mark `workspace` trusted in the state file `config_file`, keeping what it holds."""
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config = json.loads(config_file.read_text()) if config_file.is_file() else {}
    entry = config.setdefault("projects", {}).setdefault(str(workspace.resolve()), {})
    entry["hasTrustDialogAccepted"] = True
    config_file.write_text(json.dumps(config))
