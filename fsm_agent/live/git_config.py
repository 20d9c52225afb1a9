"""What a workspace's own git repository configures git to run.

A cloned repository is not the user's: its `.git/config` may name programs that the
read-only `git status`, `git diff` or `git log -p` run (`core.fsmonitor`,
`diff.external`, a textconv or filter driver, a pager, hooks), or its `.git` may be a
file pointing at a repository elsewhere. `repository_programs` names what it found, so
the permission check counts such git commands as not read-only (they are asked about).
The user's own `~/.gitconfig` is theirs and is not read.
"""

from __future__ import annotations

import os
import re

PROGRAM_KEYS = re.compile(
    r"^(?:core\.(?:fsmonitor|pager|hookspath|sshcommand|editor|askpass|gitproxy)"
    r"|diff\.external|diff\..+\.(?:textconv|command)|filter\..+\.(?:clean|smudge|process)"
    r"|merge\..+\.driver|pager\..+|include\.path|includeif\..+\.path|gpg\..*program"
    r"|credential\..*helper|interactive\.difffilter|sequence\.editor|uploadpack\..+"
    r"|receivepack\..+|remote\..+\.(?:uploadpack|receivepack)|protocol\..+)$"
)
"""Settings whose value is a program git runs, or a file of settings to read."""

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")
_OFF = frozenset({"", "false", "no", "off", "0"})


def repository_programs(directory: str) -> tuple[str, ...]:
    """The program-naming settings of the repository git would find from `directory`
    (`core.fsmonitor`, …), or why its `.git` cannot be judged; () when there is none."""
    here = os.path.abspath(directory)
    while True:
        dot_git = os.path.join(here, ".git")
        if os.path.isdir(dot_git) and not os.path.islink(dot_git):
            return _config_programs(os.path.join(dot_git, "config"))
        if os.path.lexists(dot_git):
            return (f"{dot_git} is a link or a file naming a repository elsewhere",)
        parent = os.path.dirname(here)
        if parent == here:
            return ()
        here = parent


def _config_programs(path: str) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return ()
    except OSError as exc:
        return (f"{path} cannot be read ({exc.strerror})",)
    found: list[str] = []
    section = ""
    for line in lines:
        line = line.split("#", 1)[0].split(";", 1)[0] if '"' not in line else line
        if (head := _SECTION.match(line)) is not None:
            name, sub = head.group(1).lower(), head.group(2)
            section = f"{name}.{sub}" if sub is not None else name
            line = line[head.end() :]
        if (key := _KEY.match(line)) is None or not section:
            continue
        setting = f"{section}.{key.group(1).lower()}"
        value = (key.group(2) or "").strip().strip('"').lower()
        if PROGRAM_KEYS.match(setting.lower()) and not (
            setting == "core.fsmonitor" and value in _OFF
        ):
            found.append(setting)
    return tuple(dict.fromkeys(found))
