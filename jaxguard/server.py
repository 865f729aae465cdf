"""`jaxguard server`: the linter as a Language Server Protocol server over stdio (pygls 2).

What an editor gets, from the same engine, rules, `[tool.jaxguard]` configuration and
`# noqa` handling as `jaxguard check`:

- diagnostics when a Python file is opened or saved, and after each change (debounced);
  `code` is the rule code, linked to its document;
- code actions: each finding's fix as a quick fix (safe fixes; unsafe ones labelled, and
  only with the `unsafeFixes` setting), "suppress with `# noqa: JG301`", and
  `source.fixAll.jaxguard` (every safe fix, for fix-all on save);
- hover on a finding, or on a code in a `# noqa:` comment: the rule's document;
- the `[tool.jaxguard]` table of the file's project, re-read when the file changes; files
  it excludes get no diagnostics; a configuration error is shown once, as a message;
- the project index: what another open file's unsaved text says (a function it jits, a key
  its helper draws from) reaches the files that depend on it; they are re-checked.

Settings (initializationOptions, or `workspace/didChangeConfiguration` under "jaxguard"):
`unsafeFixes` (false), `severity` ("warning": "error", "warning", "information" or
"hint"), `debounce` (milliseconds after a change, 150), `projectIndex` (true).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace.position_codec import ServerTextPosition

from jaxguard._version import __version__
from jaxguard.config import Config, ConfigError, find_pyproject, load_config
from jaxguard.lint.diagnostic import Diagnostic
from jaxguard.lint.files import check_data
from jaxguard.lint.registry import rule_by_name_or_code

FIX_ALL = "source.fixAll.jaxguard"
_SEVERITIES = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_CODE = re.compile(r"\bJG\d{3}\b")
log = logging.getLogger(__name__)


@dataclass
class Options:
    unsafe_fixes: bool = False
    severity: str = "warning"
    debounce: float = 0.15  # seconds
    project_index: bool = True

    def update(self, settings) -> None:
        if not isinstance(settings, dict):
            return
        settings = settings.get("jaxguard", settings)
        if not isinstance(settings, dict):
            return
        if isinstance(settings.get("unsafeFixes"), bool):
            self.unsafe_fixes = settings["unsafeFixes"]
        if settings.get("severity") in _SEVERITIES:
            self.severity = settings["severity"]
        if isinstance(settings.get("debounce"), (int, float)) and settings["debounce"] >= 0:
            self.debounce = settings["debounce"] / 1000
        if isinstance(settings.get("projectIndex"), bool):
            self.project_index = settings["projectIndex"]


@dataclass
class Checked:
    """One check of one document version: its text and jaxguard's findings on it."""

    version: int | None
    text: str
    findings: list[Diagnostic] = field(default_factory=list)


class JaxguardServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("jaxguard", __version__)
        self.options = Options()
        self.checked: dict[str, Checked] = {}  # uri -> the last check
        self.pending: dict[str, asyncio.Task] = {}  # uri -> a debounced check
        self._configs: dict[str, tuple[int, Config | None]] = {}  # pyproject path -> (mtime, config)
        self._shown_errors: set[str] = set()

    # configuration --------------------------------------------------------------------
    def config_for(self, path: str) -> Config | None:
        """The file's project configuration, re-read when its pyproject.toml changes; None
        (shown once) when it is invalid."""
        pyproject = find_pyproject(Path(path).parent)
        if pyproject is None:
            return Config(root=Path(path).parent)
        key = str(pyproject)
        try:
            mtime = pyproject.stat().st_mtime_ns
        except OSError:
            mtime = -1
        cached = self._configs.get(key)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        try:
            config = load_config(pyproject)
            config.validate()
        except ConfigError as error:
            config = None
            message = f"jaxguard: {error}"
            if message not in self._shown_errors:
                self._shown_errors.add(message)
                self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))
        self._configs[key] = (mtime, config)
        return config

    # checking -------------------------------------------------------------------------
    def open_python_documents(self) -> dict[str, str]:
        """path -> text of every open Python document (for the project index)."""
        found = {}
        for uri, document in list(self.workspace.text_documents.items()):
            path = to_fs_path(uri)
            if path and path.endswith((".py", ".pyi")):
                found[path] = document.source
        return found

    def check_text(self, uri: str, text: str, version: int | None, fix: bool = False):
        """Check one document's text (in a worker thread). Returns (Checked, the outcome) or
        None when the file gets no diagnostics (not Python, excluded, a bad configuration)."""
        path = to_fs_path(uri)
        if not path or not path.endswith((".py", ".pyi")):
            return None
        config = self.config_for(path)
        if config is None or _excluded(config, path):
            return None
        settings = config.settings_for(path)
        data = text.encode("utf-8", "surrogatepass")
        if self.options.project_index:
            from jaxguard.lint.cache import default_cache_dir
            from jaxguard.lint.project import view_for_text

            others = {p: t.encode("utf-8", "surrogatepass") for p, t in self.open_python_documents().items() if p != path}
            view = view_for_text(path, data, str(default_cache_dir(config.root)), config.exclude, config.root, others)
            settings = settings.with_project(view)
        outcome = check_data(data, path, settings, fix=fix, unsafe=self.options.unsafe_fixes)
        return Checked(version, text, outcome.diagnostics), outcome

    async def check_now(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        text, version = document.source, document.version
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self.thread_pool, self.check_text, uri, text, version)
        except Exception as error:  # the engine reports rule crashes itself; this is the rest
            log.exception("jaxguard: checking %s failed", uri)
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Error, message=f"jaxguard: checking {uri} failed: {error!r}"))
            return
        current = self.workspace.text_documents.get(uri)
        if current is None or current.version != version:
            return  # closed, or changed meanwhile: a newer check follows
        checked = result[0] if result is not None else Checked(version, text)
        before = self.checked.get(uri)
        self.checked[uri] = checked
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=self.lsp_diagnostics(checked))
        )
        if before is None or before.text != text:
            self.recheck_others(uri)

    def recheck_others(self, uri: str) -> None:
        """An open file's text changed: the other open files of its project may be judged
        differently (a function it traces, a key its helper draws from)."""
        if not self.options.project_index:
            return
        from jaxguard.lint.project import find_root

        root = find_root(Path(to_fs_path(uri)))
        for other in list(self.workspace.text_documents):
            # only files of the same project see this one's text (`view_for_text`)
            if other != uri and other in self.checked and find_root(Path(to_fs_path(other))) == root:
                self.schedule(other, delay=self.options.debounce)

    def schedule(self, uri: str, delay: float) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()

        async def later():
            try:
                if delay:
                    await asyncio.sleep(delay)
                await self.check_now(uri)
            finally:
                if self.pending.get(uri) is current:
                    del self.pending[uri]

        current = asyncio.ensure_future(later())
        self.pending[uri] = current

    # LSP shapes -----------------------------------------------------------------------
    def to_range(self, lines: list[str], finding: Diagnostic) -> types.Range:
        codec = self.workspace.position_codec
        start = ServerTextPosition(max(0, finding.line - 1), max(0, finding.column - 1))
        end = ServerTextPosition(max(0, finding.end_line - 1), max(0, finding.end_column - 1))
        return types.Range(start=codec.position_to_client_units(lines, start), end=codec.position_to_client_units(lines, end))

    def lsp_diagnostics(self, checked: Checked) -> list[types.Diagnostic]:
        lines = checked.text.splitlines(keepends=True)
        out = []
        for index, finding in enumerate(checked.findings):
            engine = finding.code in ("JG001", "JG002", "JG003")
            out.append(types.Diagnostic(
                range=self.to_range(lines, finding),
                message=f"{finding.message} ({finding.name})" if finding.name else finding.message,
                severity=types.DiagnosticSeverity.Error if engine else _SEVERITIES[self.options.severity],
                code=finding.code,
                code_description=_code_description(finding.code),
                source="jaxguard",
                data={"index": index, "version": checked.version},
            ))
        return out

    def offset_edit(self, text: str, start: int, end: int, new: str) -> types.TextEdit:
        """A TextEdit for text[start:end] -> new (character offsets)."""
        lines = text.splitlines(keepends=True)
        return types.TextEdit(range=self._range_of(lines, text, start, end), new_text=new)

    def _range_of(self, lines: list[str], text: str, start: int, end: int) -> types.Range:
        codec = self.workspace.position_codec

        def position(offset: int) -> types.Position:
            line = text.count("\n", 0, offset)
            column = offset - (text.rfind("\n", 0, offset) + 1)
            return codec.position_to_client_units(lines, ServerTextPosition(line, column))

        return types.Range(start=position(start), end=position(end))

    def current(self, uri: str) -> Checked | None:
        """The last check if it is of the document's current version."""
        document = self.workspace.text_documents.get(uri)
        checked = self.checked.get(uri)
        if document is None or checked is None or checked.version != document.version:
            return None
        return checked


server = JaxguardServer()


def _excluded(config: Config, path: str) -> bool:
    from jaxguard.lint.discover import _Excluded

    return _Excluded(config.exclude, config.root)(Path(path))


def _code_description(code: str) -> types.CodeDescription | None:
    from jaxguard.lint.report import INFORMATION_URI

    if rule_by_name_or_code(code) is None:
        return None
    return types.CodeDescription(href=f"{INFORMATION_URI}/blob/main/rules/{code}.md")


# lifecycle and documents ------------------------------------------------------------------
@server.feature(types.INITIALIZE)
def initialize(ls: JaxguardServer, params: types.InitializeParams) -> None:
    ls.options.update(params.initialization_options)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: JaxguardServer, params: types.DidChangeConfigurationParams) -> None:
    ls.options.update(params.settings)
    for uri in list(ls.checked):
        ls.schedule(uri, delay=0)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: JaxguardServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, delay=0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: JaxguardServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, delay=ls.options.debounce)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: JaxguardServer, params: types.DidSaveTextDocumentParams) -> None:
    from jaxguard.lint.project import forget_indexes

    forget_indexes()  # the file on disk changed: the project index reads it again
    ls.schedule(params.text_document.uri, delay=0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: JaxguardServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    ls.checked.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


# code actions -----------------------------------------------------------------------------
@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL],
        resolve_provider=False,
    ),
)
async def code_action(ls: JaxguardServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    checked = ls.current(uri)
    if checked is None:
        document = ls.workspace.get_text_document(uri)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(ls.thread_pool, ls.check_text, uri, document.source, document.version)
        if result is None:
            return []
        checked = ls.checked[uri] = result[0]
    only = params.context.only
    actions: list[types.CodeAction] = []
    if not only or any(kind.startswith(types.CodeActionKind.QuickFix) for kind in only):
        for diagnostic in params.context.diagnostics:
            actions.extend(_quick_fixes(ls, uri, checked, diagnostic))
    if only is None or any(FIX_ALL.startswith(kind) or kind == FIX_ALL for kind in only):
        fix_all = await _fix_all(ls, uri, checked)
        if fix_all is not None:
            actions.append(fix_all)
    return actions


def _finding_for(checked: Checked, diagnostic: types.Diagnostic) -> Diagnostic | None:
    if diagnostic.source != "jaxguard" or not isinstance(diagnostic.data, dict):
        return None
    index = diagnostic.data.get("index")
    if diagnostic.data.get("version") != checked.version or not isinstance(index, int):
        return None
    if not 0 <= index < len(checked.findings) or checked.findings[index].code != diagnostic.code:
        return None
    return checked.findings[index]


def _quick_fixes(ls: JaxguardServer, uri: str, checked: Checked, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    finding = _finding_for(checked, diagnostic)
    if finding is None:
        return []
    actions = []
    fix = finding.fix
    if fix is not None and fix.edits and (fix.safe or ls.options.unsafe_fixes):
        label = fix.description or "apply jaxguard's fix"
        edits = [ls.offset_edit(checked.text, edit.start, edit.end, edit.text) for edit in fix.edits]
        actions.append(types.CodeAction(
            title=f"{label} ({finding.code})" + ("" if fix.safe else " [unsafe: may change what the program computes]"),
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=fix.safe,
            edit=types.WorkspaceEdit(changes={uri: edits}),
        ))
    if finding.code not in ("JG001", "JG002"):
        actions.append(_suppress(ls, uri, checked, finding, diagnostic))
    return actions


def _suppress(ls: JaxguardServer, uri: str, checked: Checked, finding: Diagnostic, diagnostic) -> types.CodeAction:
    """`# noqa: JG301` at the end of the finding's first line, or its code added to the
    `# noqa:` already there (ruff keeps it with `external = ["JG"]`, as the README says)."""
    lines = checked.text.splitlines(keepends=True)
    number = min(max(finding.line, 1), max(len(lines), 1)) - 1
    line = lines[number] if lines else ""
    body = line.rstrip("\r\n")
    start = sum(len(text) for text in lines[:number])
    noqa = _NOQA.search(body)
    if noqa is not None and noqa.group("codes"):
        at = start + noqa.end("codes")
        edit = ls.offset_edit(checked.text, at, at, f", {finding.code}")
    elif noqa is not None:  # a bare `# noqa` already silences every code
        edit = ls.offset_edit(checked.text, start + noqa.end(), start + noqa.end(), f": {finding.code}")
    else:
        at = start + len(body)
        edit = ls.offset_edit(checked.text, at, at, f"  # noqa: {finding.code}")
    return types.CodeAction(
        title=f"Suppress {finding.code} on this line (# noqa: {finding.code})",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=types.WorkspaceEdit(changes={uri: [edit]}),
    )


async def _fix_all(ls: JaxguardServer, uri: str, checked: Checked) -> types.CodeAction | None:
    if not any(f.fix is not None and f.fix.edits and (f.fix.safe or ls.options.unsafe_fixes) for f in checked.findings):
        return None
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(ls.thread_pool, lambda: ls.check_text(uri, checked.text, checked.version, fix=True))
    if result is None:
        return None
    outcome = result[1]
    new = outcome.fixed_text
    if not outcome.fixed or new is None or new == checked.text:
        return None
    # one edit over the changed middle: the unchanged head and tail keep the editor's marks
    old = checked.text
    head = len(os.path.commonprefix([old, new]))
    tail = len(os.path.commonprefix([old[head:][::-1], new[head:][::-1]]))
    edit = ls.offset_edit(old, head, len(old) - tail, new[head:len(new) - tail])
    return types.CodeAction(
        title=f"jaxguard: fix all ({outcome.fixed} fix{'es' if outcome.fixed != 1 else ''})",
        kind=FIX_ALL,
        edit=types.WorkspaceEdit(changes={uri: [edit]}),
    )


# hover ------------------------------------------------------------------------------------
@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: JaxguardServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    lines = document.lines
    if params.position.line >= len(lines):
        return None
    codec = ls.workspace.position_codec
    position = codec.position_from_client_units(lines, params.position)
    line_text = lines[position.line]
    # a code written in a `# noqa:` (or `# jaxguard:`) comment
    comment = line_text.find("#")
    if comment != -1 and position.character >= comment:
        for match in _CODE.finditer(line_text, comment):
            if match.start() <= position.character <= match.end():
                return _rule_hover(match.group())
    # a finding under the cursor
    checked = ls.current(uri)
    if checked is None:
        return None
    for finding in checked.findings:
        start = (finding.line - 1, finding.column - 1)
        end = (finding.end_line - 1, finding.end_column - 1)
        if start <= (position.line, position.character) <= end:
            return _rule_hover(finding.code)
    return None


def _rule_hover(code: str) -> types.Hover | None:
    rule = rule_by_name_or_code(code)
    if rule is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=rule.document()))


def main() -> int:
    server.start_io()
    return 0
