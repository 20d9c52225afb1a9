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

import json
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from fsm_agent.core.jsontext import no_constant

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


def read_for_rewrite(path: Path) -> Any:
    """The JSON a settings or state file holds before it is rewritten, `{}` when there is
    none yet; a file that cannot be read or parsed raises (OSError, ValueError,
    RecursionError), so the caller leaves it alone rather than lose what it holds."""
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constant)


def write_json(path: Path, data: Any, new_mode: int | None = None) -> None:
    """`data` written whole (`write_whole`), indented as Claude Code writes these files."""
    write_whole(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", new_mode)


def write_whole(path: Path, text: str, new_mode: int | None = None) -> None:
    """The whole file or none of it: a run killed mid-write leaves the old one (its
    mode kept). A settings or state file that is a link (to a dotfiles repository, say)
    stays one: its target is written. A new file is made under the umask, or with
    `new_mode` (the state file, which may hold servers' tokens, is the user's alone)."""
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():  # nothing to lose
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if new_mode is None else new_mode
        )
        with os.fdopen(fd, "w", encoding="utf-8") as new:
            new.write(text)
        return
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.chmod(temporary, stat.S_IMODE(path.stat().st_mode))
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
