"""Where Claude Code keeps the user's own files, as the real CLI finds them.

`~/.claude` holds the user's `settings.json` (and the transcripts under `projects/`);
`~/.claude.json` is the CLI's state file: the trust dialog's answer per project and
the user's and each project's MCP servers. With `CLAUDE_CONFIG_DIR` set, both are in
that directory instead (`$CLAUDE_CONFIG_DIR/settings.json`,
`$CLAUDE_CONFIG_DIR/.claude.json`) and nothing of `~` is read, as the CLI 2.1.332
does (measured). A blank value counts as unset: the CLI would take the working
directory for its config directory then, which would make a cloned repository's
`settings.json` the user's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from attrs import frozen

CONFIG_DIR_VARIABLE = "CLAUDE_CONFIG_DIR"
STATE_FILE = ".claude.json"


@frozen
class UserFiles:
    """The user's Claude Code files for one run: the config directory (its
    `settings.json`) and the state file (`.claude.json`)."""

    config_dir: Path
    state_file: Path

    @property
    def settings(self) -> Path:
        return self.config_dir / "settings.json"

    @staticmethod
    def at(home: str | Path) -> UserFiles:
        """The files of `home`, whatever the environment says: a caller (a test) that
        names the home means that home's."""
        return UserFiles(Path(home) / ".claude", Path(home) / STATE_FILE)

    @staticmethod
    def of(env: Mapping[str, str] | None = None, home: str | None = None) -> UserFiles:
        """The files as the CLI finds them: `$CLAUDE_CONFIG_DIR`'s when `env` (default:
        this process's environment) sets it, else `home`'s (default: `~`)."""
        env = os.environ if env is None else env
        configured = env.get(CONFIG_DIR_VARIABLE, "").strip()
        if configured:
            config_dir = Path(configured)
            return UserFiles(config_dir, config_dir / STATE_FILE)
        return UserFiles.at(home if home is not None else os.path.expanduser("~"))
