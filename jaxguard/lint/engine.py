"""source -> parse -> module facts -> rules (one batched traversal) -> diagnostics -> fixes."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc
import re
import sys
import threading
import traceback
import warnings
from dataclasses import dataclass, field

import libcst as cst

from jaxguard.lint import kinds
from jaxguard.lint.diagnostic import Diagnostic, Edit, Fix
from jaxguard.lint.facts import ModuleFacts, Scope, is_main_guard
from jaxguard.lint.positions import Positions
from jaxguard.lint.registry import INTERNAL_ERROR, SYNTAX_ERROR, Rule, all_rules
from jaxguard.lint.project import ProjectView
from jaxguard.lint.settings import LintSettings
from jaxguard.lint.requirements import runs_on_jax_before
from jaxguard.lint.suppress import Suppressions
from jaxguard.lint.walk import NODE_TYPES, child_fields

MAX_FIX_PASSES = 10


@dataclass(frozen=True)
class ReplaceNode:
    """A fix step: replace `node` by `text` (resolved to offsets once positions are known)."""

    node: cst.CSTNode
    text: str


@dataclass(frozen=True)
class AddImport:
    """A fix step: make sure `statement` (e.g. `import jax`) is at the top of the module."""

    statement: str


@dataclass(frozen=True)
class RemoveNode:
    """A fix step: delete a whole statement line."""

    node: cst.CSTNode


@dataclass
class PendingFix:
    steps: tuple
    safe: bool
    description: str


@dataclass
class _Report:
    rule: type[Rule]
    node: cst.CSTNode
    message: str
    fix: PendingFix | None
    statement: cst.CSTNode | None
    top: cst.CSTNode | None  # the module-level statement it is in


class RuleContext:
    """What a rule sees: the module's facts, the current scope, value kinds, and `report`."""

    def __init__(self, facts: ModuleFacts, settings: LintSettings, path: str, source: str) -> None:
        self.facts = facts
        self.source = source  # the module's text (module.code would regenerate it)
        self.settings = settings
        self.path = path
        self.scope_stack: list[Scope] = []
        self.statement_stack: list[cst.CSTNode] = []
        self.kinds = kinds.KindTracker(self)
        self.reports: list[_Report] = []
        self._qualnames: dict[cst.CSTNode, str | None] = {}
        self.top_statement: dict[cst.CSTNode, cst.CSTNode] = {}  # statement -> module-level one

    @property
    def module(self) -> cst.Module:
        return self.facts.module

    @property
    def scope(self) -> Scope:
        return self.scope_stack[-1]

    @property
    def function(self):
        """The innermost enclosing FunctionInfo, or None at module level."""
        return self.facts.enclosing_function(self.scope)

    @property
    def in_traced(self) -> bool:
        if not self.facts.any_traced:
            return False
        function = self.function
        if function is None or not function.traced:
            return False
        # after `if <tracing>: return`, the function runs on concrete values only
        eager = self.facts.eager_only
        return not (eager and any(statement in eager for statement in self.statement_stack))

    @property
    def under_transform(self) -> bool:
        """Inside a function JAX traces or differentiates (or one nested in it): its values
        may be tracers, which numpy functions reject."""
        function = self.function
        while function is not None:
            if function.traced or function.differentiated:
                return True
            function = self.facts.enclosing_function(function.parent)
        return False

    def rebinds(self, name: str) -> bool:
        """An assignment to `name` here rebinds what `name` reads here. In a function that
        only reads a global or outer `name`, `name = ...` would make it local, and every
        read of it before that assignment would raise UnboundLocalError."""
        scope = self.scope
        return scope.kind != "function" or scope.binds(name) or name in scope.declared_global or name in scope.declared_nonlocal

    def qualname(self, node: cst.BaseExpression) -> str | None:
        # several rules ask about the same call's function: resolve each node once
        try:
            return self._qualnames[node]
        except KeyError:
            name = self._qualnames[node] = self.facts.qualname(node, self.scope)
            return name

    def kind_of(self, node: cst.BaseExpression) -> str | None:
        return self.kinds.kind_of(node)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def module_alias(self, qualified: str) -> str | None:
        """A name in scope that refers to module `qualified` (e.g. `jnp` for jax.numpy)."""
        scope: Scope | None = self.scope
        while scope is not None:
            for local, target in scope.imports.items():
                # visible from here, and not rebound to something else in its scope
                if target == qualified and local not in scope.values and self.scope.lookup(local) is scope:
                    return local
            scope = scope.parent
        return None

    def report(self, rule: Rule, node: cst.CSTNode, message: str, fix, statement=None) -> None:
        pending = None
        if fix is not None:
            steps, safe, description = fix
            pending = PendingFix(tuple(steps), safe, description)
        if statement is None and self.statement_stack:
            statement = self.statement_stack[-1]
        top = self.top_statement.get(statement) if statement is not None else None
        if "\n" in message:
            message = " ".join(message.split())  # one line: a message quoting code spread over lines
        self.reports.append(_Report(type(rule), node, message, pending, statement, top))


class _Runner:
    """The batched traversal: every enabled rule's visit_/leave_ methods, one walk.

    The same order and fields as walk.walk, with the per-node bookkeeping (scopes, the
    statement stack, value kinds) looked up once per node type: this loop runs for every
    node of every module, so it is written out rather than built from visitor calls.
    """

    def __init__(self, ctx: RuleContext, rules: list[Rule]) -> None:
        self.ctx = ctx
        self.visitors: dict[str, list] = {}
        self.leavers: dict[str, list] = {}
        for rule in rules:
            for attr in dir(type(rule)):
                if attr.startswith("visit_"):
                    self.visitors.setdefault(attr[6:], []).append(getattr(rule, attr))
                elif attr.startswith("leave_"):
                    self.leavers.setdefault(attr[6:], []).append(getattr(rule, attr))
        self.scope_types = {type(node) for node in ctx.facts.scopes}
        self.dead = ctx.facts.dead_code  # code a literal or constant flag rules out is not checked
        self.outside: set[cst.CSTNode] = set()  # parameter defaults: run where their `def` is
        # node type -> (child fields, opens a scope, is a statement, binds names, visit, leave)
        self.by_type: dict[type, tuple] = {}

    def _for_type(self, kind: type) -> tuple:
        entry = self.by_type[kind] = (
            child_fields(kind),
            kind in self.scope_types,
            issubclass(kind, (cst.SimpleStatementLine, cst.BaseCompoundStatement)),
            kind in kinds.BINDING_NODES,
            self.visitors.get(kind.__name__, ()),
            self.leavers.get(kind.__name__, ()),
        )
        return entry

    def run(self, node: cst.CSTNode) -> None:
        ctx = self.ctx
        entry = self.by_type.get(type(node)) or self._for_type(type(node))
        fields, opens_scope, is_statement, binds, visitors, leavers = entry
        if self.dead and node in self.dead:
            return
        if self.outside and node in self.outside:
            return  # a parameter default, already run where its `def` is
        scope = ctx.facts.scopes.get(node) if opens_scope else None
        if scope is not None and type(node) is cst.FunctionDef and node.decorators:
            # decorators run where the `def` is, when it runs: not inside the function
            for decorator in node.decorators:
                self.run(decorator)
            fields = tuple(name for name in fields if name != "decorators")
        if scope is not None and type(node) is cst.FunctionDef:
            # so do the defaults of its parameters: evaluated once, when the `def` runs
            parameters = node.params
            for param in (*parameters.posonly_params, *parameters.params, *parameters.kwonly_params):
                if param.default is not None:
                    self.run(param.default)
                    self.outside.add(param.default)
        if scope is not None:
            ctx.scope_stack.append(scope)
            ctx.kinds.enter(scope)
        if is_statement:
            ctx.statement_stack.append(node)
            ctx.top_statement[node] = ctx.statement_stack[0]
        for callback in visitors:
            callback(node)
        branches = type(node) is cst.If  # `if`/`else` arms: one or the other runs
        if branches:
            ctx.kinds.begin_branches()
        for name in fields:
            if branches and name == "orelse":
                ctx.kinds.begin_else()
            value = getattr(node, name)
            if type(value) in (list, tuple):  # a libcst sequence field holds only nodes
                for item in value:
                    self.run(item)
            elif type(value) in NODE_TYPES:
                self.run(value)
        if branches:
            ctx.kinds.end_branches()
        for callback in leavers:
            callback(node)
        if binds:
            ctx.kinds.after(node)
        if is_statement:
            ctx.statement_stack.pop()
        if scope is not None:
            ctx.kinds.leave(ctx.scope_stack.pop())


@dataclass
class LintResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    parse_error: bool = False


# Where lines break for Python and libcst: CRLF, LF and a lone CR, also inside strings.
_LINE_BREAK = re.compile(r"\r\n?|\n")


def _line_offsets(source: str) -> list[int]:
    """The offset of the first character of each line, lines numbered as libcst numbers them."""
    return [0, *(match.end() for match in _LINE_BREAK.finditer(source))]


def parse_error_diagnostic(path: str, source: str, error: Exception) -> Diagnostic:
    """Python's own message and position where it has one (libcst's can point past the
    error). Code that Python reads is beyond libcst, and the message says so."""
    line = getattr(error, "raw_line", None) or 1
    raw_column = getattr(error, "raw_column", None)
    column = raw_column + 1 if isinstance(raw_column, int) else 1
    message = _first_line(error)
    try:
        compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as python_error:
        line, column, message = python_error.lineno or 1, python_error.offset or 1, python_error.msg
    except (ValueError, RecursionError, MemoryError):
        pass
    else:  # e.g. 4,000 implicitly joined strings
        message = f"valid Python, but too deeply nested or chained for libcst, jaxguard's parser ({message})"
    code, name = SYNTAX_ERROR
    return Diagnostic(code, name, f"cannot parse: {message}", line, column, line, column, path=path)


def _first_line(error: BaseException) -> str:
    return (getattr(error, "message", None) or str(error) or type(error).__name__).strip().splitlines()[0]


def _too_deep(path: str) -> Diagnostic:
    code, name = SYNTAX_ERROR
    return Diagnostic(code, name, "cannot parse: nested too deeply to analyze", 1, 1, 1, 1, path=path)


# Valid code can be deeper than Python's default recursion limit lets a tree walk go
# (CPython compiles a 2,900-term `a + a + ...`): such a module is checked again on a
# thread with a large stack and recursion limit.
DEEP_STACK_BYTES = 512 * 2**20
DEEP_RECURSION_LIMIT = 100_000


def _deeply(function, *args):
    """function(*args), retried on a deep stack after a RecursionError; None if even that fails."""
    try:
        return function(*args)
    except RecursionError:
        pass
    outcome: list = []

    def run() -> None:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, DEEP_RECURSION_LIMIT))
        try:
            outcome.append((True, function(*args)))
        except RecursionError:
            pass
        except BaseException as error:  # raised again in the caller's thread
            outcome.append((False, error))
        finally:
            sys.setrecursionlimit(limit)

    previous = threading.stack_size()
    try:
        threading.stack_size(DEEP_STACK_BYTES)
        thread = threading.Thread(target=run, name="jaxguard-deep")
    except (ValueError, RuntimeError):  # a platform without settable stacks
        return None
    finally:
        threading.stack_size(previous)
    thread.start()
    thread.join()
    if not outcome:
        return None
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


@contextlib.contextmanager
def _collector_paused():
    """Pause Python's cyclic garbage collector while one module is checked.

    A libcst tree and the facts about it are hundreds of thousands of fresh objects, and
    the collector would scan them again and again while they are built (measured: about a
    sixth of the time of a check). They are freed by reference counting when the check
    ends; anything cyclic is collected once the collector is back on.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_module(source: str) -> cst.Module:
    """cst.parse_module, without libcst re-validating every node its own parser built.

    Each node's `__post_init__` runs libcst's checks for hand-built trees (measured: about
    a seventh of the parse); a parsed tree satisfies them by construction (a comment in
    libcst there suggests skipping them when parsing). The class attribute is swapped only for the duration of the
    parse; a libcst without that hook is simply parsed as it is.
    """
    base = cst.CSTNode
    validating = base.__dict__.get("__post_init__")
    if validating is None:
        return cst.parse_module(source)
    base.__post_init__ = _built_by_the_parser
    try:
        return cst.parse_module(source)
    finally:
        base.__post_init__ = validating


def _built_by_the_parser(node: cst.CSTNode) -> None:
    pass


def lint_source(source: str, path: str, settings: LintSettings) -> LintResult:
    """Lint one module's text. Never raises for bad input: a parse failure is a diagnostic."""
    result = _deeply(_lint_source, source, path, settings)
    return result if result is not None else LintResult([_too_deep(path)], parse_error=True)


def _lint_source(source: str, path: str, settings: LintSettings) -> LintResult:
    with _collector_paused():
        try:
            module = parse_module(source)
        except (cst.ParserSyntaxError, SyntaxError, ValueError) as error:
            return LintResult([parse_error_diagnostic(path, source, error)], parse_error=True)
        diagnostics = _lint_module(module, source, path, settings)
        if settings.project is not None and settings.project.summary_error:
            code, name = INTERNAL_ERROR
            message = f"internal error summarising this module for the project index: {settings.project.summary_error}; other modules know nothing of it"
            diagnostics.insert(0, Diagnostic(code, name, message, 1, 1, 1, 1, path=path))
        return LintResult(diagnostics)


def _pinned_before_removal(rule: type[Rule], path: str) -> bool:
    """The rule reports an API a JAX release removed, and the file's project runs on older ones."""
    return rule.removed_in is not None and runs_on_jax_before(path, rule.removed_in)


def _lint_module(module: cst.Module, source: str, path: str, settings: LintSettings) -> list[Diagnostic]:
    rules_by_code = all_rules()
    facts = ModuleFacts.build(module, settings.traced_decorators, settings.project)
    ctx = RuleContext(facts, settings, path, source)
    rules = [
        rules_by_code[code](ctx) for code in sorted(settings.enabled)
        if code in rules_by_code and not _pinned_before_removal(rules_by_code[code], path)
    ]
    diagnostics: list[Diagnostic] = []
    try:
        _Runner(ctx, rules).run(module)
        for rule in rules:
            rule.finish()
    except RecursionError:
        raise  # lint_source tries again on a deeper stack
    except Exception as error:  # one rule's bug must not stop the run
        code, name = INTERNAL_ERROR
        where = traceback.extract_tb(error.__traceback__)[-1]
        failing = _failing_rule(error)
        culprit = f" in rule {failing.code} ({failing.name})" if failing is not None else ""
        message = f"internal error{culprit}: {type(error).__name__}: {error} (at {where.name}:{where.lineno})"
        report = Diagnostic(code, name, message, 1, 1, 1, 1, path=path)
        if failing is not None and failing.code in settings.enabled:
            # The other rules still run on this file.
            rest = dataclasses.replace(settings, enabled=settings.enabled - {failing.code})
            return [report] + _lint_module(module, source, path, rest)
        return [report]
    if not ctx.reports:
        return diagnostics
    tops = {report.top for report in ctx.reports}
    if any(report.fix is not None for report in ctx.reports):
        tops.add(_first_code_statement(module))  # where an added import goes
    positions = Positions(module, source, tops)
    offsets = _line_offsets(source)
    suppressions = Suppressions.from_source(source)
    seen = set()
    for report in ctx.reports:
        if report.rule.code in settings.quiet_in_test_code and _test_code(report.top, settings.project):
            continue  # a library's smoke test reuses keys and counts traces on purpose, as tests do
        span = positions[report.node]
        key = (report.rule.code, span.start.line, span.start.column, report.message)
        if key in seen:
            continue
        seen.add(key)
        noqa_lines = _statement_lines(report, positions, span)
        if suppressions.suppressed(report.rule.code, noqa_lines):
            continue
        fix = _resolve_fix(report.fix, positions, offsets, module, source) if report.fix else None
        diagnostics.append(
            Diagnostic(
                report.rule.code,
                report.rule.name,
                report.message,
                span.start.line,
                span.start.column + 1,
                span.end.line,
                span.end.column + 1,
                fix=fix,
                path=path,
                noqa_lines=tuple(noqa_lines),
            )
        )
    diagnostics.sort(key=Diagnostic.sort_key)
    return diagnostics


def _test_code(top: cst.CSTNode | None, project: ProjectView | None) -> bool:
    """A top-level function named as a test (`def test_*`, `def regular_test`: pytest's
    naming of test functions and of test modules) outside a test file: pytest does not
    collect it there, so it is a smoke test run by hand (kinetix's `test_ued`, alpa's
    `test_gpt_lm`).
    So is the `if __name__ == "__main__":` block of a module other project modules import:
    a library module's demo (a script's main block is its work, and stays checked)."""
    if isinstance(top, cst.FunctionDef):
        return top.name.value.startswith("test") or top.name.value.endswith("_test")
    return isinstance(top, cst.If) and project is not None and project.imported and is_main_guard(top)


def _failing_rule(error: BaseException) -> Rule | None:
    """The innermost rule whose method raised `error`, if any."""
    failing = None
    for frame, _ in traceback.walk_tb(error.__traceback__):
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Rule):
            failing = candidate
    return failing


def _statement_lines(report: _Report, positions, span) -> list[int]:
    """The lines on which a `# noqa` applies: the whole simple statement, or a header."""
    lines = set(range(span.start.line, span.end.line + 1))
    statement = report.statement
    if statement is not None:
        statement_span = positions[statement]
        end = statement_span.end.line
        if isinstance(statement, cst.BaseCompoundStatement):
            end = span.end.line
        lines.update(range(statement_span.start.line, end + 1))
    return sorted(lines)


def _resolve_fix(pending: PendingFix, positions, offsets, module: cst.Module, source: str) -> Fix:
    edits = []
    for step in pending.steps:
        if isinstance(step, ReplaceNode):
            span = positions[step.node]
            start = offsets[span.start.line - 1] + span.start.column
            end = offsets[span.end.line - 1] + span.end.column
            edits.append(Edit(start, end, step.text))
        elif isinstance(step, RemoveNode):
            span = positions[step.node]
            start = offsets[span.start.line - 1]
            end = offsets[span.end.line] if span.end.line < len(offsets) else len(source)
            edits.append(Edit(start, end, ""))
        elif isinstance(step, AddImport):
            if step.statement not in _top_level_imports(module):
                at = _import_insertion_offset(module, source, positions, offsets)
                newline = module.default_newline  # the file's own: CRLF stays CRLF
                text = step.statement + newline
                if at == len(source) and source and not _LINE_BREAK.fullmatch(source[-1]):
                    text = newline + text  # after a last line that has no line break
                edits.append(Edit(at, at, text))
    return Fix(tuple(edits), pending.safe, pending.description)


def _top_level_imports(module: cst.Module) -> set[str]:
    found = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    found.add(module.code_for_node(small).strip())
    return found


def _first_code_statement(module: cst.Module) -> cst.CSTNode | None:
    """The first statement after the docstring and `from __future__` imports."""
    for index, statement in enumerate(module.body):
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            small = statement.body[0]
            if index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
                continue
            if isinstance(small, cst.ImportFrom) and _dotted_module(small) == "__future__":
                continue
        return statement
    return None


def _import_insertion_offset(module: cst.Module, source: str, positions, offsets) -> int:
    """Before the first statement after the docstring and `from __future__` imports."""
    insert_before = _first_code_statement(module)
    if insert_before is None:
        return len(source)
    span = positions[insert_before]
    return offsets[span.start.line - 1]


def _dotted_module(node: cst.ImportFrom) -> str:
    return cst.Module([]).code_for_node(node.module) if node.module is not None else ""


# fixing ---------------------------------------------------------------------------


def apply_edits(source: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (identical duplicates are applied once)."""
    result = []
    last = 0
    for edit in sorted(set(edits), key=lambda e: (e.start, e.end)):
        if edit.start < last:
            continue
        result.append(source[last : edit.start])
        result.append(edit.text)
        last = edit.end
    result.append(source[last:])
    return "".join(result)


def _compiles(source: str) -> bool:
    """CPython compiles it (libcst accepts some text CPython rejects, such as a NUL byte in a
    string). Top-level `await` is allowed: notebooks have it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are the user's, not ours to print
            compile(source, "<fixed>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except (SyntaxError, ValueError, OverflowError, MemoryError):
        return False
    return True


def _parses(source: str) -> bool:
    try:
        parse_module(source)
    except RecursionError:
        raise  # deep code: the whole fix is tried again on a deeper stack
    except Exception:
        return False
    return True


class _Validator:
    """Is a fixed text fit to write? It parses (libcst), it compiles if the original did, and
    `accept` (the file's own condition: its encoding, a notebook's cell markers) holds."""

    def __init__(self, original: str, accept=None) -> None:
        self.original = original
        self.accept = accept
        self._original_compiles: bool | None = None

    def __call__(self, candidate: str) -> bool:
        if self.accept is not None and not self.accept(candidate):
            return False
        if self._original_compiles is None:
            self._original_compiles = _compiles(self.original)
        if self._original_compiles and not _compiles(candidate):
            return False
        return _parses(candidate)


def _conflicts(a: Edit, b: Edit) -> bool:
    if a == b:
        return False  # the same import added by two fixes
    if a.start == a.end == b.start == b.end:
        return True  # two insertions at one point: their order would matter
    return a.start < b.end and b.start < a.end


def _fixes_apply(source: str, fixes: list[Fix], valid=None) -> tuple[str, int]:
    """Apply the fixes that don't conflict and keep the file valid. Returns (text, count)."""
    valid = valid or _Validator(source)
    chosen: list[Fix] = []
    for fix in fixes:
        if not any(_conflicts(a, b) for other in chosen for a in fix.edits for b in other.edits):
            chosen.append(fix)
    if not chosen:
        return source, 0
    candidate = apply_edits(source, [e for fix in chosen for e in fix.edits])
    if valid(candidate):
        return candidate, len(chosen)
    # Some fix spoils the file: keep each one that leaves it valid on top of those kept.
    kept: list[Fix] = []
    result = source
    for fix in chosen:
        attempt = apply_edits(source, [e for f in (*kept, fix) for e in f.edits])
        if valid(attempt):
            kept.append(fix)
            result = attempt
    return result, len(kept)


def fix_source(
    source: str, path: str, settings: LintSettings, unsafe: bool = False, accept=None
) -> tuple[str, int, list[Diagnostic]]:
    """Apply fixes until none is left (a fixed point: a second run changes nothing), at most
    MAX_FIX_PASSES rounds. `accept(text)`, if given, must hold for every text written.
    Returns (new source, fixes applied, remaining diagnostics)."""
    fixed = _deeply(_fix_source, source, path, settings, unsafe, accept)
    return fixed if fixed is not None else (source, 0, [_too_deep(path)])


def _fix_source(source: str, path: str, settings: LintSettings, unsafe: bool, accept) -> tuple[str, int, list[Diagnostic]]:
    total = 0
    valid = _Validator(source, accept)
    for _ in range(MAX_FIX_PASSES):
        result = lint_source(source, path, settings)
        if result.parse_error:
            return source, total, result.diagnostics
        fixes = [d.fix for d in result.diagnostics if d.fix and d.fix.edits and (d.fix.safe or unsafe)]
        if not fixes:
            return source, total, result.diagnostics
        new_source, applied = _fixes_apply(source, fixes, valid)
        if applied == 0 or new_source == source:
            return source, total, result.diagnostics
        source, total = new_source, total + applied
    return source, total, lint_source(source, path, settings).diagnostics
