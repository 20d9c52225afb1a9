"""Grep: search file contents with a regex, shaped like ripgrep's options and output.

Python's `re` stands in for ripgrep. Hidden files are searched, VCS
directories and binary files (NUL in the first 8 KB) are skipped, and
`.gitignore` files are honoured, from the workspace root down (see
`fsm_agent.tools.walk.GitIgnore` for the subset understood).
The files are listed here and searched in a child process: Python's `re`
backtracks, and holds the GIL while it does, so a pattern such as `(a+)+$`
can run for ever and freeze the whole process, Ctrl-C included, where a child
can be killed, on cancellation or after `GREP_TIMEOUT_S`. The children are
long-lived search workers (`fsm_agent.tools.worker`), one per call in flight,
kept by the tool between calls: starting one costs tens of milliseconds, a
job sent to one about a millisecond. `GrepTool.close` ends them when the run
ends.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

from attrs import frozen

from fsm_agent.core.globs import compile_glob, split_globs
from fsm_agent.core.tool import ToolEnv, ToolInputError, ToolOutcome, integer
from fsm_agent.tools.files import BOM, CWD_NOTE, SNIFF_BYTES, clip_line, looks_binary, printable
from fsm_agent.tools.walk import open_found, walk_found
from fsm_agent.tools.worker import Workers, serve
from fsm_agent.tools.workspace import check_path, is_within

MAX_OUTPUT_CHARS = 30_000
DEFAULT_HEAD_LIMIT = 250
"""Claude Code's: the entries a search shows when the model names no `head_limit`."""
MAX_FILE_BYTES = 20 * 1024 * 1024
GREP_TIMEOUT_S = 60.0
MAX_COLUMNS = 500
"""What Grep shows of a line, as Claude Code's `rg --max-columns 500`; the rest is cut."""
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")

FILE_TYPES: dict[str, tuple[str, ...]] = {
    "asm": ("*.asm", "*.s", "*.S"),
    "bat": ("*.bat",),
    "c": ("*.[chH]", "*.[chH].in", "*.cats"),
    "clojure": ("*.clj", "*.cljc", "*.cljs", "*.cljx"),
    "cmake": ("*.cmake", "CMakeLists.txt"),
    "config": ("*.cfg", "*.conf", "*.config", "*.ini"),
    "cpp": ("*.[ChH]", "*.cc", "*.[ch]pp", "*.[ch]xx", "*.hh", "*.inl"),
    "cs": ("*.cs",),
    "csharp": ("*.cs",),
    "css": ("*.css", "*.scss"),
    "csv": ("*.csv",),
    "d": ("*.d",),
    "dart": ("*.dart",),
    "diff": ("*.patch", "*.diff"),
    "docker": ("*Dockerfile*",),
    "dockercompose": ("docker-compose.yml", "docker-compose.*.yml"),
    "elixir": ("*.ex", "*.eex", "*.exs", "*.heex", "*.leex", "*.livemd"),
    "elm": ("*.elm",),
    "erlang": ("*.erl", "*.hrl"),
    "fish": ("*.fish",),
    "fortran": ("*.f", "*.F", "*.f77", "*.F77", "*.pfo", "*.f90", "*.F90", "*.f95", "*.F95"),
    "fsharp": ("*.fs", "*.fsx", "*.fsi"),
    "go": ("*.go",),
    "gradle": ("*.gradle", "*.gradle.kts", "gradle.properties", "gradle-wrapper.*", "gradlew"),
    "graphql": ("*.graphql", "*.graphqls"),
    "groovy": ("*.groovy", "*.gradle"),
    "h": ("*.h", "*.hh", "*.hpp"),
    "haskell": ("*.hs", "*.lhs", "*.cpphs", "*.c2hs", "*.hsc"),
    "hs": ("*.hs", "*.lhs"),
    "html": ("*.htm", "*.html", "*.ejs"),
    "java": ("*.java", "*.jsp", "*.jspx", "*.properties"),
    "jl": ("*.jl",),
    "js": ("*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs"),
    "json": ("*.json", "composer.lock", "*.sarif"),
    "jsonl": ("*.jsonl",),
    "julia": ("*.jl",),
    "jupyter": ("*.ipynb",),
    "kotlin": ("*.kt", "*.kts"),
    "less": ("*.less",),
    "lock": ("*.lock", "package-lock.json"),
    "log": ("*.log",),
    "lua": ("*.lua",),
    "make": ("[Gg][Nn][Uu]makefile", "[Mm]akefile", "Makefile.*", "*.mk", "*.mak"),
    "markdown": ("*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"),
    "md": ("*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"),
    "nim": ("*.nim", "*.nimf", "*.nimble", "*.nims"),
    "nix": ("*.nix",),
    "objc": ("*.h", "*.m"),
    "ocaml": ("*.ml", "*.mli", "*.mll", "*.mly"),
    "perl": ("*.perl", "*.pl", "*.PL", "*.plh", "*.plx", "*.pm", "*.t"),
    "php": ("*.php", "*.php3", "*.php4", "*.php5", "*.php7", "*.php8", "*.pht", "*.phtml"),
    "proto": ("*.proto",),
    "protobuf": ("*.proto",),
    "ps": ("*.cdxml", "*.ps1", "*.ps1xml", "*.psd1", "*.psm1"),
    "py": ("*.py", "*.pyi"),
    "python": ("*.py", "*.pyi"),
    "r": ("*.R", "*.r", "*.Rmd", "*.rmd", "*.Rnw", "*.rnw"),
    "rst": ("*.rst",),
    "ruby": ("config.ru", "Gemfile", ".irbrc", "Rakefile", "*.gemspec", "*.rb", "*.rbw", "*.rake"),
    "rust": ("*.rs",),
    "sass": ("*.sass", "*.scss"),
    "scala": ("*.scala", "*.sbt"),
    "sh": ("*.bash", "*.csh", "*.env", "*.ksh", "*.sh", "*.tcsh", "*.zsh", ".bashrc", ".zshrc"),
    "sql": ("*.sql", "*.psql"),
    "svelte": ("*.svelte", "*.svelte.ts"),
    "svg": ("*.svg",),
    "swift": ("*.swift",),
    "tex": ("*.tex", "*.ltx", "*.cls", "*.sty", "*.bib", "*.dtx", "*.ins"),
    "tf": ("*.tf", "*.tf.json", "*.tfvars", "*.tfvars.json", "*.terraform.lock.hcl"),
    "toml": ("*.toml", "Cargo.lock"),
    "ts": ("*.ts", "*.tsx", "*.cts", "*.mts"),
    "txt": ("*.txt",),
    "typescript": ("*.ts", "*.tsx", "*.cts", "*.mts"),
    "vim": ("*.vim", ".vimrc", ".gvimrc", "vimrc", "gvimrc", "_vimrc", "_gvimrc"),
    "vue": ("*.vue",),
    "xml": (
        "*.xml",
        "*.xml.dist",
        "*.dtd",
        "*.xsl",
        "*.xslt",
        "*.xsd",
        "*.xjb",
        "*.rng",
        "*.xhtml",
    ),
    "yaml": ("*.yaml", "*.yml"),
    "zig": ("*.zig",),
    "zsh": (".zshenv", ".zlogin", ".zlogout", ".zprofile", ".zshrc", "*.zsh"),
}
"""ripgrep's default types (`rg --type-list`) that code is most often searched by,
with its globs; `proto` besides, as fsm-agent has long taken it."""

MODES = ("files_with_matches", "content", "count")

POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
"""The ASCII classes ripgrep's regex knows inside brackets (`[[:space:]]`), as ranges."""
_POSIX = re.compile(r"\[:(\w+):\]")
_NAMED_GROUP = re.compile(r"\(\?<[A-Za-z_]")

DESCRIPTION = f"""\
Search file contents with a regular expression (Python `re` syntax, close to \
ripgrep's). Searches `path` (a file or directory; default: the working \
directory), skipping .git, binary files and what .gitignore files exclude.
Filter files with `glob` (e.g. `*.py`, `src/**/*.{{ts,tsx}}`) or `type` \
(ripgrep's names: js, ts, py, rust, go, java, c, cpp, md, json, yaml…).
output_mode: `files_with_matches` (default; paths, newest first), `content` \
(matching lines as path:line:text; `-n` line numbers default on; `-A`/`-B`/`-C` \
context; `-o` only the matched parts, each on a line of its own) or `count` \
(matching lines per file).
`-i` ignores case; `multiline` lets a match span lines (`.` matches newlines). \
`head_limit` (default {DEFAULT_HEAD_LIMIT}; 0 for all) and `offset` page through the \
output entries."""

_INT = {"type": "integer", "minimum": 0}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Regular expression to search for"},
        "path": {"type": "string", "description": "File or directory to search"},
        "glob": {"type": "string", "description": "Glob filter for file names, e.g. *.py"},
        "type": {"type": "string", "description": "File type filter, e.g. py, js, rust"},
        "output_mode": {"type": "string", "enum": list(MODES)},
        "-i": {"type": "boolean", "description": "Case-insensitive search"},
        "-n": {"type": "boolean", "description": "Show line numbers (content mode)"},
        "-o": {
            "type": "boolean",
            "description": "Show only the matched parts, one per line (content mode)",
        },
        "-A": {**_INT, "description": "Lines of context after each match (content mode)"},
        "-B": {**_INT, "description": "Lines of context before each match (content mode)"},
        "-C": {**_INT, "description": "Lines of context around each match (content mode)"},
        "context": {**_INT, "description": "Same as -C"},
        "head_limit": {
            **_INT,
            "description": f"Show at most this many entries (default {DEFAULT_HEAD_LIMIT}; 0: all)",
        },
        "offset": {**_INT, "description": "Skip this many entries first"},
        "multiline": {"type": "boolean", "description": "Let matches span lines"},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


@frozen
class Query:
    regex: re.Pattern[str]
    multiline: bool
    mode: str
    line_numbers: bool
    before: int
    after: int
    file_globs: tuple[re.Pattern[str], ...]
    excluded: tuple[re.Pattern[str], ...] = ()
    only_matching: bool = False

    @classmethod
    def parse(cls, input: dict[str, Any]) -> Query:
        flags = re.IGNORECASE if input.get("-i") else 0
        multiline = bool(input.get("multiline"))
        if multiline:
            flags |= re.MULTILINE | re.DOTALL
        try:
            regex = re.compile(python_regex(input["pattern"]), flags)
        except re.error as exc:
            raise ToolInputError(f"Invalid regular expression: {exc}") from None
        around = integer(input, "context")
        around = integer(input, "-C") if around is None else around
        file_globs, excluded = _file_globs(input.get("glob"), input.get("type"))
        return cls(
            regex=regex,
            multiline=multiline,
            mode=input.get("output_mode", "files_with_matches"),
            line_numbers=input.get("-n", True),
            before=integer(input, "-B", 0) if around is None else around,
            after=integer(input, "-A", 0) if around is None else around,
            file_globs=file_globs,
            excluded=excluded,
            only_matching=bool(input.get("-o")),
        )

    def wants(self, base: str, path: str) -> bool:
        """ripgrep's `--glob`: a file must match one glob (if any is given) and no `!`
        glob; a `!` glob matching a directory leaves out everything under it."""
        rel = os.path.relpath(path, base).replace(os.sep, "/")
        if self.excluded:
            parts = rel.split("/")
            ancestors = ["/".join(parts[: i + 1]) for i in range(len(parts))]
            names = {*ancestors, *parts}
            if any(g.fullmatch(n) for g in self.excluded for n in names):
                return False
        if not self.file_globs:
            return True
        name = os.path.basename(path)
        return any(g.fullmatch(rel) or g.fullmatch(name) for g in self.file_globs)


RUST_ESCAPES = {"\\<": r"\b(?=\w)", "\\>": r"\b(?<=\w)", "\\z": r"\Z"}
"""Escapes of ripgrep's regex that Python's `re` reads otherwise (`\\<` a literal `<`)
or refuses, outside brackets, as Python writes them."""


def python_regex(pattern: str) -> str:
    """`pattern`, in ripgrep's syntax, in Python's: each `[:name:]` inside brackets
    as its ranges (`re` would take it for a set of letters), `\\<`, `\\>` and `\\z`
    outside them as `RUST_ESCAPES`, and `(?<name>` as `(?P<name>`."""
    if not any(mark in pattern for mark in ("[:", "\\<", "\\>", "\\z", "(?<")):
        return pattern
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            escape = pattern[i : i + 2]
            out.append(escape if in_class else RUST_ESCAPES.get(escape, escape))
            i += 2
            continue
        if not in_class and _NAMED_GROUP.match(pattern, i):
            out.append("(?P<")
            i += 3
            continue
        if in_class and (m := _POSIX.match(pattern, i)) and m[1] in POSIX_CLASSES:
            out.append(POSIX_CLASSES[m[1]])
            i = m.end()
            continue
        out.append(c)
        if not in_class and c == "[":
            in_class = True
            start = i + 1 + (pattern.startswith("^", i + 1))
            if pattern.startswith("]", start):
                out.append(pattern[i + 1 : start + 1])
                i = start
        elif in_class and c == "]":
            in_class = False
        i += 1
    return "".join(out)


def _file_globs(
    glob: str | None, file_type: str | None
) -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    """The globs a file must match (one of), and the `!` globs it must not.

    As in ripgrep, where globs override file types: with an include glob, that glob
    decides and `file_type` adds nothing; with only `!` globs, the type still filters.
    """
    patterns = split_globs(glob) if glob else []
    excluded = tuple(compile_glob(p[1:]) for p in patterns if p.startswith("!") and p[1:])
    patterns = [p for p in patterns if not p.startswith("!")]
    if file_type:
        if file_type not in FILE_TYPES:
            raise ToolInputError(
                f"Unknown file type {file_type!r}. Known types: {', '.join(FILE_TYPES)}."
            )
        if not patterns:
            patterns = list(FILE_TYPES[file_type])
    return tuple(compile_glob(p) for p in patterns), excluded


@frozen
class FileMatches:
    """Where the regex matched in one file: its lines and the 0-based indices that hit."""

    path: str
    lines: tuple[str, ...]
    hits: tuple[int, ...]


class GrepTool:
    """Content search without a shell: structured options, confined to the workspace."""

    name = "Grep"
    description = DESCRIPTION
    input_schema = SCHEMA

    def __init__(self) -> None:
        self.workers = Workers(__name__)

    def close(self) -> None:
        """End the search processes (the run is over); a later call starts a new one."""
        self.workers.close()

    async def run(self, input: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        query = Query.parse(input)
        where = input.get("path") or env.cwd
        check = check_path(where, env)
        if not check.inside:
            return check.refusal()
        if not os.path.exists(check.resolved):
            raise ToolInputError(f"Path does not exist: {where}. {CWD_NOTE} {env.cwd}.")
        files, too_big = await asyncio.to_thread(
            _by_size, _candidates(query, check.resolved, check.roots, env.hidden)
        )
        single = os.path.isfile(check.resolved)
        limit = _size(MAX_FILE_BYTES)
        if single and too_big:
            raise ToolInputError(
                f"{where} is {_size(os.path.getsize(check.resolved))}; Grep searches files of "
                f"at most {limit}. Search it with Bash (grep, rg) instead."
            )
        job = {"input": input, "files": files, "single": single, "respond": env.wants_response}
        try:
            text, response = await self.workers.run(job, GREP_TIMEOUT_S)
        except TimeoutError:
            raise ToolInputError(
                f"Grep timed out after {GREP_TIMEOUT_S:g} s. The pattern may backtrack without "
                "end (nested repetition such as (a+)+), or the search is too wide: simplify "
                "the pattern, or narrow path, glob or type."
            ) from None
        if too_big:
            names = ", ".join(printable(p) for p in too_big[:5])
            more = f" and {len(too_big) - 5} more" if len(too_big) > 5 else ""
            text += f"\n\n(Not searched, being over {limit}: {names}{more})"
        return ToolOutcome(text, response=response)


def _by_size(
    found: Iterator[tuple[str, str, os.stat_result]],
) -> tuple[list[tuple[str, str]], list[str]]:
    """The files Grep can search (each with where it really is, for the search to open
    it only there), and the text files over `MAX_FILE_BYTES` that it says it did not
    (binary ones are skipped without a word, whatever their size)."""
    small: list[tuple[str, str]] = []
    big: list[str] = []
    for path, real, status in found:
        if status.st_size <= MAX_FILE_BYTES:
            small.append((path, real))
            continue
        f = open_found(path, real)
        if f is None:
            continue
        try:
            with f:
                head = f.read(SNIFF_BYTES)
        except OSError:
            continue
        if head.startswith(UTF16_BOMS) or not looks_binary(head):
            big.append(path)
    return small, big


def _size(n: int) -> str:
    return f"{n // 2**20} MB" if n >= 2**20 else f"{n} bytes"


def _search(job: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """A search worker's job: the rendered result of searching `job["files"]`, and its
    response if `job["respond"]`."""
    input = job["input"]
    query = Query.parse(input)
    results = [
        r for path, real in job["files"] if (r := _search_file(query, path, real)) is not None
    ]
    head_limit = integer(input, "head_limit", DEFAULT_HEAD_LIMIT)
    offset = integer(input, "offset", 0)
    return _render(query, results, job["single"], head_limit, offset, job["respond"])


def _candidates(
    query: Query, base: str, roots: tuple[str, ...], hidden: Callable[[str], bool] | None
) -> Iterator[tuple[str, str, os.stat_result]]:
    """The files to search, each with where it really is and its status (`walk_found`):
    a file `base` (already resolved) is where it is."""
    if os.path.isfile(base):
        with contextlib.suppress(OSError):  # gone since: nothing to search
            yield base, base, os.stat(base)
        return
    root = max((r for r in roots if is_within(base, r)), key=len)
    for found in walk_found(base, roots, root, hidden):
        if query.wants(base, found[0]):
            yield found


def _search_file(query: Query, path: str, real: str) -> FileMatches | None:
    """`path`'s matches, if it is still where the listing found it (`open_found`): a
    link swapped in since then is not followed."""
    f = open_found(path, real)
    if f is None:
        return None
    try:
        with f:
            raw = f.read()
    except OSError:
        return None
    text = _decoded(raw)
    if text is None:
        return None
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if query.multiline:
        hits = _multiline_hits(query.regex, text, lines)
    else:
        hits = [i for i, line in enumerate(lines) if query.regex.search(line)]
    return FileMatches(path, tuple(lines), tuple(hits)) if hits else None


def _decoded(raw: bytes) -> str | None:
    """A file's text as ripgrep reads it: after a UTF-16 byte order mark, UTF-16 (whose
    NUL bytes make no binary file); else UTF-8 without its mark; None if it is binary."""
    if raw.startswith(UTF16_BOMS):
        return raw.decode("utf-16", errors="replace")
    if looks_binary(raw):
        return None
    return raw.decode("utf-8", errors="replace").removeprefix(BOM)


def _multiline_hits(regex: re.Pattern[str], text: str, lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    hit: set[int] = set()
    for m in regex.finditer(text):
        first = bisect.bisect_right(starts, m.start()) - 1
        last = bisect.bisect_right(starts, max(m.end() - 1, m.start())) - 1
        hit.update(range(first, min(last, len(lines) - 1) + 1))
    return sorted(hit)


def _render(
    query: Query,
    results: list[FileMatches],
    single: bool,
    head_limit: int,
    offset: int,
    respond: bool = False,
) -> tuple[str, dict[str, Any] | None]:
    """The result's text, and with `respond` Claude Code's `{mode, numFiles, filenames, …}`.
    Content and count list the files in Claude Code's order, so `head_limit` keeps the
    same ones; the file list is newest first, as its is."""
    if query.mode != "files_with_matches":
        results = sorted(results, key=lambda r: _js_order(r.path))
    if query.mode == "content":
        entries = _content_lines(query, results, single)
    elif query.mode == "count":
        entries = [
            f"{printable(r.path)}:{len(r.hits)}" if not single else str(len(r.hits))
            for r in results
        ]
    else:
        entries = [printable(p) for p in _newest_first([r.path for r in results])]
    shown = entries[offset : offset + head_limit] if head_limit else entries[offset:]
    total = sum(len(r.hits) for r in results)
    response = None
    if respond:
        kept = shown[: _kept(shown)]
        limited = head_limit if offset + len(shown) < len(entries) else 0
        response = _response(query.mode, kept, len(results), total, limited, offset)
    if not entries:
        return found(query.mode, None, 0, 0), response
    note = ""
    if offset + len(shown) < len(entries):
        note = (
            f"\n(Showing entries {offset + 1}-{offset + len(shown)} of {len(entries)}; "
            f"use offset={offset + len(shown)} to see more.)"
        )
    elif not shown:
        note = f"\n(offset {offset} is past the last of {len(entries)} entries.)"
    return found(query.mode, _cap("\n".join(shown)), len(results), total, note), response


def found(mode: str, shown: str | None, files: int, lines: int, note: str = "") -> str:
    """What the model reads of a search in `mode` that showed the entries `shown` (None:
    nothing matched) of `files` files and `lines` matching lines, with a paging `note`:
    the tool's one text, and a PostToolUse hook's replacement's
    (`fsm_agent.tools.output`), whose shape holds no paging."""
    if shown is None:
        return "No files found" if mode == "files_with_matches" else "No matches found"
    parts: list[str] = []
    if mode == "files_with_matches":
        parts.append(f"Found {_plural(files, 'file')}")
    parts.append(shown)
    if mode == "count":
        parts.append(f"\nFound {_plural(lines, 'matching line')} in {_plural(files, 'file')}.")
    if note:
        parts.append(note)
    return "\n".join(parts)


def _response(
    mode: str, kept: list[str], files: int, lines: int, head_limit: int, offset: int
) -> dict[str, Any]:
    """Claude Code's Grep result: the paths in `filenames` (files_with_matches), or the
    entries in `content` and the number of `files` that matched (content, count); the
    `head_limit` that cut the entries short, if one did."""
    response: dict[str, Any] = {"mode": mode}
    if mode == "files_with_matches":
        response |= {"numFiles": len(kept), "filenames": kept}
    else:
        response |= {"numFiles": files, "filenames": [], "content": "\n".join(kept)}
        response |= {"numLines": len(kept)} if mode == "content" else {"numMatches": lines}
    if head_limit:
        response["appliedLimit"] = head_limit
    if offset:
        response["appliedOffset"] = offset
    return response


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _content_lines(query: Query, results: list[FileMatches], single: bool) -> list[str]:
    if query.only_matching:
        return _matched_parts(query, results, single)
    out: list[str] = []
    for r in results:
        hits = set(r.hits)
        show: set[int] = set()
        for i in r.hits:
            show.update(range(max(0, i - query.before), min(len(r.lines), i + query.after + 1)))
        previous = None
        for i in sorted(show):
            if out and (previous is None or i != previous + 1) and (query.before or query.after):
                out.append("--")
            sep = ":" if i in hits else "-"
            prefix = "" if single else f"{printable(r.path)}{sep}"
            number = f"{i + 1}{sep}" if query.line_numbers else ""
            out.append(f"{prefix}{number}{clip_line(r.lines[i], MAX_COLUMNS)}")
            previous = i
    return out


def _matched_parts(query: Query, results: list[FileMatches], single: bool) -> list[str]:
    """ripgrep's `-o`: each non-empty match on a line of its own (a match that spans lines,
    one line per line it spans), without context."""
    out: list[str] = []
    for r in results:
        prefix = "" if single else f"{printable(r.path)}:"
        parts: list[tuple[int, str]] = []
        if query.multiline:
            text = "\n".join(r.lines)
            starts = [0]
            for line in r.lines[:-1]:
                starts.append(starts[-1] + len(line) + 1)
            for m in query.regex.finditer(text):
                first = bisect.bisect_right(starts, m.start()) - 1
                parts += [(first + k, piece) for k, piece in enumerate(m.group().split("\n"))]
        else:
            for i in r.hits:
                parts += [(i, m.group()) for m in query.regex.finditer(r.lines[i])]
        for i, part in parts:
            if part:
                number = f"{i + 1}:" if query.line_numbers else ""
                out.append(f"{prefix}{number}{clip_line(part, MAX_COLUMNS)}")
    return out


def _js_order(path: str) -> bytes:
    """The key that sorts paths as JavaScript's default `sort` does, by UTF-16 code unit
    (measured on Claude Code 2.1.x: `B.txt` < `a.txt` < `a/c.txt` < `a_b.txt`, and an
    emoji before U+E000): UTF-16-BE bytes compare the same way. An undecodable name's
    lone surrogate (Python's `surrogateescape`) is kept as it is."""
    return path.encode("utf-16-be", "surrogatepass")


def _newest_first(paths: list[str]) -> list[str]:
    def key(path: str) -> tuple[float, str]:
        with contextlib.suppress(OSError):
            return (-os.path.getmtime(path), path)
        return (0.0, path)

    return sorted(paths, key=key)


def _kept(entries: list[str]) -> int:
    """How many of `entries` `_cap` keeps whole once they are joined by newlines."""
    end = -1
    for n, entry in enumerate(entries):
        end += len(entry) + 1
        if end >= MAX_OUTPUT_CHARS and (end > MAX_OUTPUT_CHARS or n + 1 < len(entries)):
            return n
    return len(entries)


def _cap(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    cut = text.rfind("\n", 0, MAX_OUTPUT_CHARS)
    kept = text[: cut if cut > 0 else MAX_OUTPUT_CHARS]
    return (
        f"{kept}\n[Output truncated at {MAX_OUTPUT_CHARS} characters; narrow the search "
        "or page with head_limit and offset.]"
    )


if __name__ == "__main__":
    serve(_search)
