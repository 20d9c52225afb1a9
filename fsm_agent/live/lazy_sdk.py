"""Import the `anthropic` SDK without executing the parts a run does not use.

The SDK's `types` and `resources` packages are tables of re-exports: their
`__init__.py` files import every model and resource class there is (2,881
modules, about a second on a slow machine, most of it the beta and organization
APIs), although a run streams one kind of message. A finder on `sys.meta_path`
gives each such package a loader that reads the table without running it: the
package's names resolve on first use (PEP 562's module `__getattr__`), each
importing only the submodule that defines it. A package whose `__init__.py`
does anything but re-export is loaded as written, so what the SDK exposes and
how it behaves stay the same; only when its modules load changes.

The package `anthropic` itself also imports, at its end, every platform's client
(Bedrock, Vertex, Foundry, AWS, Google Cloud), the beta tool runner and the
stream helpers (`anthropic.lib.*`), and those import the whole beta API. Its
`__init__.py` runs as written but for those imports, whose names resolve on
first use instead (and are then renamed into `anthropic` as the file renames
the others). If the file's shape is not the one expected, it runs unchanged.

One module of the SDK's core runs only on use: `anthropic._error_classes`, the
table from an error response's status and code to its exception class, which
imports some 280 modules of error types (about 40 ms) that a run answered
without an error never needs. `_base_client` takes one function from it; that
name is a stand-in calling the module's own function, the module's code run
the first time it or any other of its names is used.

The beta types (some 400 modules) are also kept off a run's path. The SDK's
tracing and parse helpers (`anthropic.lib._tracing.*`, `anthropic.lib._parse.*`)
import beta classes to test `isinstance`, to `cast` and to build type aliases:
there each is a late class, which nothing is an instance of until its module
has run (no object of it can exist before) and which answers as the real class
after; a use inside a function that needs the class itself imports it then. A
module that uses one otherwise at its top level runs as written. The beta
streams of `anthropic.lib.streaming`, and the aliases built of them, resolve on
first use.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import importlib.abc
import importlib.machinery
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from importlib import import_module
from types import CodeType, ModuleType
from typing import Any

from fsm_agent.live.rewrite_cache import cached_rewrite

SDK = "anthropic"
LAZY_PACKAGES = ("anthropic.types", "anthropic.resources")
"""The SDK's packages, with every package under them, that may load lazily."""

ON_USE: dict[str, tuple[str, ...]] = {"anthropic._error_classes": ("make_status_error",)}
"""Modules run on first use → the functions other modules import from them at their
import, which stand in until then."""

Exports = dict[str, tuple[str, str | None]]
"""A name the package exports → (the absolute module it comes from, its name there;
None when the name is that module itself)."""


def exports_of(package: str, source: str) -> tuple[Exports, list[str] | None] | None:
    """The re-export table of a package's `__init__.py`, and its `__all__`; None when
    the file does anything else (then it must run as written)."""
    table: Exports = {}
    names: list[str] | None = None
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            table.update({a.name: ("__future__", a.name) for a in node.names})
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                if alias.name == "*":
                    return None
                bound = alias.asname or alias.name
                if node.module is None:  # from . import sub
                    table[bound] = (f"{package}.{alias.name}", None)
                else:
                    table[bound] = (f"{package}.{node.module}", alias.name)
            continue
        if _is_all(node):
            assert isinstance(node, ast.Assign)
            value = ast.literal_eval(node.value)
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                return None
            names = list(value)
            continue
        return None
    return table, names


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_all(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id == "__all__"
    )


def _resolver(module: ModuleType, table: Exports) -> Callable[[str], Any]:
    def __getattr__(name: str) -> Any:
        try:
            source, attr = table[name]
        except KeyError:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None
        origin = import_module(source)
        if attr is None:
            value: Any = origin
        else:
            try:
                value = getattr(origin, attr)
            except AttributeError:  # from .pkg import submodule
                value = import_module(f"{source}.{attr}")
        setattr(module, name, value)
        return value

    return __getattr__


class _ReexportLoader(importlib.abc.Loader):
    """Loads a re-export package as its table: nothing of it runs until a name is used."""

    def __init__(self, table: Exports, names: list[str] | None) -> None:
        self.table = table
        self.names = names

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        module.__getattr__ = _resolver(module, self.table)  # type: ignore[method-assign]
        exported = sorted(self.table)
        module.__dir__ = lambda: sorted({*module.__dict__, *exported})  # type: ignore[method-assign]
        if self.names is not None:
            module.__all__ = self.names  # type: ignore[attr-defined]


def public_names(source: str) -> list[str]:
    """The names `from MODULE import *` binds, read from its source: its `__all__`, else
    every public name its top level binds."""
    names: list[str] = []
    for node in ast.parse(source).body:
        if _is_all(node):
            assert isinstance(node, ast.Assign)
            value = ast.literal_eval(node.value)
            return [str(v) for v in value]
        if isinstance(node, ast.ImportFrom | ast.Import):
            names += [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
    return [n for n in names if not n.startswith("_")]


def _source_of(package_dir: str, relative: str) -> str:
    path = os.path.join(package_dir, *relative.split("."))
    for candidate in (os.path.join(path, "__init__.py"), path + ".py"):
        if os.path.isfile(candidate):
            with open(candidate, encoding="utf-8") as file:
                return file.read()
    raise OSError(f"no source for {relative} under {package_dir}")


def deferring_tail(
    package: str, package_dir: str, source: str
) -> tuple[ast.Module, Exports, list[str]] | None:
    """The SDK's `__init__.py` without its `from .lib.… import` statements, the names those
    bind, and its `__all__` names among them; None when the file has none, or uses
    them in a way this does not know."""
    tree = ast.parse(source)
    table: Exports = {}
    kept: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and _deferred(node.module):
            origin = f"{package}.{node.module}"
            for alias in node.names:
                if alias.name == "*":
                    names = public_names(_source_of(package_dir, str(node.module)))
                    table.update({name: (origin, name) for name in names})
                else:
                    table[alias.asname or alias.name] = (origin, alias.name)
            continue
        kept.append(node)
    if not table:
        return None
    exported: list[str] = []
    for node in kept:
        if _is_all(node):
            assert isinstance(node, ast.Assign)
            exported = [str(v) for v in ast.literal_eval(node.value)]
    deferred = [name for name in exported if name in table]
    if deferred and not _skip_in_loops_over_all(kept, deferred):
        return None
    tree.body = kept
    return ast.fix_missing_locations(tree), table, deferred


def _deferred(module: str | None) -> bool:
    return module is not None and module.startswith("lib.")


def _skip_in_loops_over_all(body: list[ast.stmt], deferred: list[str]) -> bool:
    """Make each top-level `for … in __all__:` skip the deferred names (the file renames
    each exported object's `__module__`; the resolver does it for those on first use).
    False when a statement other than such a loop reads `__all__`."""
    for node in body:
        if isinstance(node, ast.For) and _is_name(node.iter, "__all__"):
            node.iter = ast.parse(
                f"[n for n in __all__ if n not in {tuple(deferred)!r}]", mode="eval"
            ).body
            continue
        if _is_all(node):
            continue
        if any(isinstance(n, ast.Name) and n.id == "__all__" for n in ast.walk(node)):
            return False
    return True


class _DeferringLoader(importlib.machinery.SourceFileLoader):
    """Runs the SDK's `__init__.py` but its `anthropic.lib` imports, which resolve on use."""

    def __init__(self, name: str, path: str, tail: tuple[CodeType, Exports, list[str]]):
        super().__init__(name, path)
        self.tail = tail

    def exec_module(self, module: ModuleType) -> None:
        code, table, renamed = self.tail
        resolve = _resolver(module, table)

        def __getattr__(name: str) -> Any:
            value = resolve(name)
            if name in renamed:
                with contextlib.suppress(TypeError, AttributeError):
                    value.__module__ = module.__name__
            return value

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dir__ = lambda: sorted({*module.__dict__, *table})  # type: ignore[method-assign]
        exec(code, module.__dict__)


def defines_functions(source: str, names: Sequence[str]) -> bool:
    """Whether the module's top level defines each of `names` as a plain function (read
    line by line: parsing the 360-line table would cost a good part of what deferring
    it saves)."""
    return all(re.search(rf"^def {re.escape(name)}\(", source, re.MULTILINE) for name in names)


class _OnUseLoader(importlib.machinery.SourceFileLoader):
    """Runs a module's code the first time one of its names is used; until then the
    functions `stand_ins` names call it into being, then call its own."""

    def __init__(self, name: str, path: str, stand_ins: Sequence[str]) -> None:
        super().__init__(name, path)
        self.stand_ins = tuple(stand_ins)

    def exec_module(self, module: ModuleType) -> None:
        lock = threading.RLock()
        ran: list[bool] = []
        run_code = super().exec_module

        def ensure() -> dict[str, Any]:
            with lock:
                if not ran:
                    ran.append(True)
                    del module.__getattr__, module.__dir__
                    run_code(module)
            return module.__dict__

        def __getattr__(name: str) -> Any:
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)  # copy's, pickle's and pydoc's probes
            try:
                return ensure()[name]
            except KeyError:
                raise AttributeError(
                    f"module {module.__name__!r} has no attribute {name!r}"
                ) from None

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dir__ = lambda: sorted(ensure())  # type: ignore[method-assign]
        for name in self.stand_ins:
            setattr(module, name, _stand_in(name, ensure))


def _stand_in(name: str, ensure: Callable[[], dict[str, Any]]) -> Callable[..., Any]:
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        return ensure()[name](*args, **kwargs)

    stand_in.__name__ = stand_in.__qualname__ = name
    return stand_in


# --- late classes: the tracing code's beta types, the messages resource's batches ------

BETA = "anthropic.types.beta"
PARAMS = "anthropic.types.*_param"
"""The request's parameter types (a pattern: `*` any run of characters): TypedDicts and
aliases of them, which the SDK names in signatures and casts but never needs to send a
request, since it sends a body as given (some 160 modules, about 20 ms)."""
TRACING_LATE = (BETA, "anthropic.types.message_create_params", PARAMS)
"""What the tracing and parse helpers import only to name: the beta API, and the
request's parameters (TypedDicts for type aliases and casts; the SDK sends a request's
body as given, so a run never loads them)."""

LATE_IMPORTS: dict[str, tuple[str, ...]] = {
    "anthropic.lib._tracing.": TRACING_LATE,
    "anthropic.lib._parse.": TRACING_LATE,
    "anthropic.resources.messages.messages": ("anthropic.resources.messages.batches", PARAMS),
    "anthropic.types.message": (PARAMS,),
}
"""Modules (a name ending in "." stands for every module of that package) → the modules
whose classes they import as late classes (below): a name, standing for that module and
the packages under it, or a pattern the module defining the class must match. The
messages resource makes its `batches` resource only when asked, and the batch API (its
resource, its result types, the create parameters) is about 64 ms of the SDK's 0.8 s
import; the response's `Message` names its parameter twin only in `to_param`."""


def late_origins(fullname: str) -> tuple[str, ...] | None:
    """The modules `fullname`'s late classes come from; None when it has none."""
    for module, origins in LATE_IMPORTS.items():
        if fullname == module or (module.endswith(".") and fullname.startswith(module)):
            return origins
    return None


class _LateMeta(type):
    """A class standing for one not loaded yet: nothing is an instance or a subclass of
    it until its module has run, since no object of the real class exists before; then
    the checks are the real class's."""

    _module: str
    _name: str

    def _real(cls) -> Any:
        module = sys.modules.get(cls._module)
        return None if module is None else module.__dict__.get(cls._name)

    def __instancecheck__(cls, instance: Any) -> bool:
        real = cls._real()
        return real is not None and isinstance(instance, real)

    def __subclasscheck__(cls, subclass: Any) -> bool:
        real = cls._real()
        return real is not None and issubclass(subclass, real)

    def _loaded(cls) -> Any:
        """The real class, its module imported now: a function of the tracing code
        that uses it as more than a type runs (a beta response's)."""
        return getattr(import_module(cls._module), cls._name)


def late_class(module: str, name: str) -> type:
    """The stand-in of class `name` of `module`, which it never imports."""
    return _LateMeta(name, (), {"_module": module, "_name": name, "__module__": module})


def _defining_module(module: str, name: str, package_dir: str) -> str | None:
    """The module whose own top level defines `name`, imported `from module`; a package's
    re-export table followed one step (read by pattern, as the tables are long)."""
    relative = module.removeprefix("anthropic.")
    try:
        source = _source_of(package_dir, relative)
    except OSError:
        return None
    word = re.escape(name)
    if os.path.isdir(os.path.join(package_dir, *relative.split("."))):
        one = rf"{word} as {word}"
        pattern = rf"^from \.(\w+) import (?:{one}$|\([^)]*?\b{one}\b[^)]*\))"
        found = re.search(pattern, source, re.MULTILINE)
        return (
            None if found is None else _defining_module(f"{module}.{found[1]}", name, package_dir)
        )
    defined = re.search(rf"^(class {word}\b|{word}\s*(:[^=]*)?=)", source, re.MULTILINE)
    return module if defined else None


def late_tree(
    fullname: str, source: str, package_dir: str, origins: Sequence[str]
) -> tuple[ast.Module, dict[str, tuple[str, str]]] | None:
    """The module `fullname` with its top-level imports from `origins` (modules, with the
    packages under them) made late classes, and those names → (defining module, name);
    None when it imports none, or uses one as more than a type: in `isinstance`/
    `issubclass`, `cast`, an annotation (these modules defer them), or a type alias
    built of `|` and subscripts."""
    tree = ast.parse(source)
    package = fullname.rpartition(".")[0]
    late: dict[str, tuple[str, str]] = {}
    body: list[ast.stmt] = []
    prefixes = [o for o in origins if "*" not in o]
    patterns = [o for o in origins if "*" in o]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level and node.module:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            origin = f"{base}.{node.module}"
            if any(origin == late or origin.startswith(late + ".") for late in prefixes):
                for alias in node.names:
                    where = _defining_module(origin, alias.name, package_dir)
                    if where is None:
                        return None
                    late[alias.asname or alias.name] = (where, alias.name)
                continue
            if patterns and origin.startswith(SDK + "."):
                kept = _late_by_pattern(node, origin, patterns, package_dir, late)
                if kept is not None:
                    body.append(kept)
                continue
        body.append(node)
    deferred = _annotations_deferred(tree)
    if not late or not (deferred or _evaluated_annotations_safe(body, set(late))):
        return None
    loads = _late_uses(body, set(late))
    if loads is None:
        return None
    body = [_LoadedNow(loads).visit(node) for node in body]
    stand_ins = [
        ast.parse(f"{bound} = __late_class__({module!r}, {name!r})").body[0]
        for bound, (module, name) in late.items()
    ]
    first = next(i for i, n in enumerate(body) if not _is_future_or_doc(n))
    tree.body = [*body[:first], *stand_ins, *body[first:]]
    return ast.fix_missing_locations(tree), late


def _late_by_pattern(
    node: ast.ImportFrom,
    origin: str,
    patterns: Sequence[str],
    package_dir: str,
    late: dict[str, tuple[str, str]],
) -> ast.ImportFrom | None:
    """Adds to `late` the names `node` imports whose defining module matches one of
    `patterns`; the import of the other names (None: there are none)."""
    relative = origin.removeprefix(SDK + ".").split(".")
    package = os.path.isdir(os.path.join(package_dir, *relative))
    if not package and not any(fnmatch.fnmatchcase(origin, p) for p in patterns):
        return node  # neither the pattern's module nor a package re-exporting it
    kept: list[ast.alias] = []
    for alias in node.names:
        where = None if alias.name == "*" else _defining_module(origin, alias.name, package_dir)
        if where is not None and any(fnmatch.fnmatchcase(where, p) for p in patterns):
            late[alias.asname or alias.name] = (where, alias.name)
        else:
            kept.append(alias)
    if not kept:
        return None
    return ast.copy_location(ast.ImportFrom(module=node.module, names=kept, level=node.level), node)


def _evaluated_annotations_safe(body: list[ast.stmt], names: set[str]) -> bool:
    """Whether a module whose annotations are evaluated (no `from __future__ import
    annotations`) may take late classes: only where the value is kept and not looked
    into, a function's parameters and return. A field's annotation (pydantic builds a
    validator of it) or a top-level alias may not name one."""

    def names_one(node: ast.expr) -> bool:
        return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))

    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.AnnAssign) and names_one(node.annotation):
            return False
    return not any(
        isinstance(node, ast.Assign | ast.AnnAssign) and node.value and names_one(node.value)
        for node in body
    )


def _is_future_or_doc(node: ast.stmt) -> bool:
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return True
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _annotations_deferred(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.ImportFrom)
        and n.module == "__future__"
        and any(a.name == "annotations" for a in n.names)
        for n in tree.body
    )


class _LoadedNow(ast.NodeTransformer):
    """`Name` → `Name._loaded()` at the uses `_late_uses` found."""

    def __init__(self, loads: set[int]) -> None:
        self.loads = loads

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if id(node) not in self.loads:
            return node
        method = ast.Attribute(value=node, attr="_loaded", ctx=ast.Load())
        return ast.copy_location(ast.Call(func=method, args=[], keywords=[]), node)


def _late_uses(body: list[ast.stmt], names: set[str]) -> set[int] | None:
    """The uses of `names` inside functions that need the real class (the ids of those
    `Name` nodes), once each other use is one a late class answers as the real one
    would; None when a use at the top level needs it, or a name is bound again."""
    allowed: set[int] = set()
    in_function: set[int] = set()
    module = ast.Module(body=body, type_ignores=[])
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
            if any(a.arg in names for a in every):
                return None
            statements = node.body if isinstance(node.body, list) else [node.body]
            for statement in statements:
                in_function.update(id(inner) for inner in ast.walk(statement))
    if not _only_as_types(module, names, allowed):
        return None
    loads: set[int] = set()
    for node in ast.walk(module):
        if not isinstance(node, ast.Name) or node.id not in names or id(node) in allowed:
            continue
        if not isinstance(node.ctx, ast.Load) or id(node) not in in_function:
            return None
        loads.add(id(node))
    return loads


def _only_as_types(module: ast.Module, names: set[str], allowed: set[int]) -> bool:
    """Adds to `allowed` each use of `names` a late class answers as the real one would:
    in `isinstance`/`issubclass`, `cast`, an annotation, a top-level type alias."""

    def type_expression(node: ast.expr) -> None:
        allowed.add(id(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            type_expression(node.left)
            type_expression(node.right)
        elif isinstance(node, ast.Subscript):
            type_expression(node.slice)
        elif isinstance(node, ast.Tuple | ast.List):
            for element in node.elts:
                type_expression(element)

    for node in ast.walk(module):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            for inner in ast.walk(node.annotation):
                allowed.add(id(inner))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            for inner in ast.walk(node.returns):
                allowed.add(id(inner))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                type_expression(node.args[1])
            elif node.func.id == "cast":
                type_expression(node.args[0])
    for node in module.body:  # a type alias: NAME = A | B, NAME = list[A | B]
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            type_expression(node.value)
    return True


class _LateLoader(importlib.machinery.SourceFileLoader):
    """Runs a module with some of the classes it imports as late classes."""

    def __init__(self, name: str, path: str, code: CodeType) -> None:
        super().__init__(name, path)
        self.code = code

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["__late_class__"] = late_class
        exec(self.code, module.__dict__)
        del module.__dict__["__late_class__"]


# --- the beta streams ------------------------------------------------------------------

DEFERRED_SUBMODULES = {"anthropic.lib.streaming": ("_beta_types", "_beta_messages")}
"""Packages → the submodules whose names (the beta streams) resolve on first use."""


def deferring_submodules(
    package: str, source: str, submodules: Sequence[str]
) -> tuple[ast.Module, Exports, dict[str, ast.stmt]] | None:
    """The package's `__init__.py` without its imports of `submodules` nor the aliases
    built of their names (`BetaTextEvent: TypeAlias = ParsedBetaTextEvent`), the names
    those imports bind, and the aliases by name; None when it uses them otherwise."""
    tree = ast.parse(source)
    table: Exports = {}
    aliases: dict[str, ast.stmt] = {}
    kept: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in submodules:
            for alias in node.names:
                if alias.name == "*":
                    return None
                table[alias.asname or alias.name] = (f"{package}.{node.module}", alias.name)
            continue
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if not used & (set(table) | set(aliases)):
            kept.append(node)
            continue
        target: ast.expr | None = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if not isinstance(target, ast.Name) or used & set(aliases):
            return None
        aliases[target.id] = node
    if not table:
        return None
    tree.body = kept
    return tree, table, aliases


class _PartlyDeferredLoader(importlib.machinery.SourceFileLoader):
    """Runs a package's `__init__.py` but the imports `deferring_submodules` took out."""

    def __init__(self, name: str, path: str, parts: CompiledParts) -> None:
        super().__init__(name, path)
        self.parts = parts

    def exec_module(self, module: ModuleType) -> None:
        code, table, aliases = self.parts
        resolve = _resolver(module, table)

        def __getattr__(name: str) -> Any:
            alias = aliases.get(name)
            if alias is None:
                return resolve(name)
            statement, needed = alias
            for used in needed:
                getattr(module, used)
            exec(statement, vars(module))
            return vars(module)[name]

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dir__ = lambda: sorted({*module.__dict__, *table, *aliases})  # type: ignore[method-assign]
        exec(code, module.__dict__)


CompiledParts = tuple[CodeType, Exports, dict[str, tuple[CodeType, list[str]]]]
"""`deferring_submodules`' parts compiled: the package's code, the deferred names, and
each alias's statement with the deferred names it needs."""


def compiled_parts(
    path: str, parts: tuple[ast.Module, Exports, dict[str, ast.stmt]]
) -> CompiledParts:
    tree, table, aliases = parts
    compiled = {
        name: (
            compile(ast.Module(body=[statement], type_ignores=[]), path, "exec"),
            sorted({n.id for n in ast.walk(statement) if isinstance(n, ast.Name)} & set(table)),
        )
        for name, statement in aliases.items()
    }
    return compile(tree, path, "exec"), table, compiled


class ReexportFinder(importlib.abc.MetaPathFinder):
    """Finds the SDK's re-export packages as the path finder does, with a lazy loader."""

    def __init__(self, prefixes: Sequence[str] = LAZY_PACKAGES) -> None:
        self.prefixes = tuple(prefixes)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == SDK:
            return self._sdk_spec(fullname, path, target)
        if fullname in ON_USE:
            return self._on_use_spec(fullname, path, target)
        if fullname in DEFERRED_SUBMODULES:
            return self._partly_deferred_spec(fullname, path, target)
        origins = late_origins(fullname)
        if origins is not None:
            return self._late_spec(fullname, path, target, origins)
        if not any(fullname == p or fullname.startswith(p + ".") for p in self.prefixes):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.submodule_search_locations is None or not spec.origin:
            return spec
        if not spec.origin.endswith("__init__.py"):
            return spec
        try:
            parsed = _rewrite("exports", fullname, spec.origin, lambda s: exports_of(fullname, s))
        except (OSError, SyntaxError, ValueError):
            return spec
        if parsed is not None:
            spec.loader = _ReexportLoader(*parsed)
        return spec

    def _partly_deferred_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not spec.origin or not spec.origin.endswith("__init__.py"):
            return spec
        origin = spec.origin

        def build(source: str) -> CompiledParts | None:
            parts = deferring_submodules(fullname, source, DEFERRED_SUBMODULES[fullname])
            return None if parts is None else compiled_parts(origin, parts)

        try:
            compiled = _rewrite("deferred", fullname, origin, build)
        except (OSError, SyntaxError, ValueError):
            return spec
        if compiled is not None:
            spec.loader = _PartlyDeferredLoader(fullname, origin, compiled)
        return spec

    def _late_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None,
        origins: Sequence[str],
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not spec.origin or spec.submodule_search_locations is not None:
            return spec
        sdk_file = getattr(sys.modules.get(SDK), "__file__", None)
        if not sdk_file:
            return spec
        origin, package_dir = spec.origin, os.path.dirname(sdk_file)

        def build(source: str) -> CodeType | None:
            late = late_tree(fullname, source, package_dir, origins)
            return None if late is None else compile(late[0], origin, "exec")

        try:
            code = _rewrite("late", fullname, origin, build)
        except (OSError, SyntaxError, ValueError):
            return spec
        if code is not None:
            spec.loader = _LateLoader(fullname, origin, code)
        return spec

    def _on_use_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not spec.origin or spec.submodule_search_locations is not None:
            return spec
        try:
            plain = _rewrite(
                "on-use", fullname, spec.origin, lambda s: defines_functions(s, ON_USE[fullname])
            )
        except (OSError, SyntaxError, ValueError):
            return spec
        if plain:
            spec.loader = _OnUseLoader(fullname, spec.origin, ON_USE[fullname])
        return spec

    def _sdk_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not spec.origin or not spec.submodule_search_locations:
            return spec
        origin = spec.origin

        def build(source: str) -> tuple[CodeType, Exports, list[str]] | None:
            tail = deferring_tail(fullname, os.path.dirname(origin), source)
            return None if tail is None else (compile(tail[0], origin, "exec"), *tail[1:])

        try:
            compiled = _rewrite("tail", fullname, origin, build)
        except (OSError, SyntaxError, ValueError):
            return spec
        if compiled is not None:
            spec.loader = _DeferringLoader(fullname, origin, compiled)
        return spec


def _rewrite(kind: str, fullname: str, origin: str, build: Callable[[str], Any]) -> Any:
    """`build` of the module's source, kept compiled between runs (`rewrite_cache`)."""
    return cached_rewrite(kind, fullname, origin, build, rewriter=__file__)


_installed = threading.Lock()


def install() -> None:
    """Put the finder first on `sys.meta_path`, once; too late once the SDK is imported."""
    with _installed:
        if "anthropic" in sys.modules:
            return
        if not any(isinstance(f, ReexportFinder) for f in sys.meta_path):
            sys.meta_path.insert(0, ReexportFinder())
