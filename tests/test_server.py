"""`jaxguard server` end to end: a real LSP client (pytest-lsp) talks to the server over stdio.

open -> diagnostics -> quick fix -> apply the edit -> clean diagnostics; hover; fix-all;
suppress with `# noqa`; configuration; the project index across open files; shutdown.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

BUGGY = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx[0] = 1.0\n"
FIXED = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)\n"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "jaxguard", "server"]))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxguard]\nexclude = ['generated/']\n")
    lsp_client.workspace_folder = tmp_path  # for the tests
    # remember the document version each publication is for, beside the diagnostics
    lsp_client.diagnostic_versions = {}

    def record(params: types.PublishDiagnosticsParams) -> None:
        lsp_client.diagnostics[params.uri] = params.diagnostics
        lsp_client.diagnostic_versions[params.uri] = params.version

    lsp_client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=from_fs_path(str(tmp_path)),
        workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(tmp_path)), name="project")],
        initialization_options={"jaxguard": {"debounce": 10}},
    ))
    yield
    await lsp_client.shutdown_session()


async def _diagnostics(client: LanguageClient, uri: str, version: int) -> list[types.Diagnostic]:
    """The diagnostics published for `uri` at `version` (waiting for them)."""
    for _ in range(200):
        published = client.diagnostics.get(uri)
        if published is not None and client.diagnostic_versions.get(uri) == version:
            return list(published)
        await asyncio.sleep(0.05)
    raise AssertionError(f"no diagnostics for {uri} version {version}: {client.diagnostics.get(uri)}")


def _open(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    uri = from_fs_path(str(path))
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


def _change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)

    def offset(position: types.Position) -> int:
        return sum(len(line) for line in lines[: position.line]) + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


@pytest.mark.asyncio
async def test_open_fix_and_clean(client: LanguageClient):
    uri = _open(client, client.workspace_folder / "train.py", BUGGY)
    (diagnostic,) = await _diagnostics(client, uri, 1)
    assert (diagnostic.code, diagnostic.source) == ("JG301", "jaxguard")
    assert (diagnostic.range.start.line, diagnostic.range.start.character) == (3, 0)
    assert diagnostic.code_description.href.endswith("rules/JG301.md")

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic])))
    titles = [action.title for action in actions]
    fix = next(action for action in actions if action.kind == types.CodeActionKind.QuickFix and action.is_preferred)
    assert "(JG301)" in fix.title
    assert any(title.startswith("Suppress JG301") for title in titles)
    fixed = _apply(BUGGY, fix.edit.changes[uri])
    assert fixed == FIXED

    _change(client, uri, fixed, 2)
    assert await _diagnostics(client, uri, 2) == []


@pytest.mark.asyncio
async def test_hover_shows_the_rules_document_on_a_finding_and_in_a_noqa(client: LanguageClient):
    text = BUGGY + "y = jnp.zeros(2)\ny[1] = 2.0  # noqa: JG301\n"
    uri = _open(client, client.workspace_folder / "hover.py", text)
    (diagnostic,) = await _diagnostics(client, uri, 1)
    on_finding = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=3, character=1)))
    assert on_finding.contents.value.startswith("# JG301 `in-place-update`")
    on_noqa = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=5, character=23)))
    assert on_noqa.contents.value.startswith("# JG301")
    nothing = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=3)))
    assert nothing is None


@pytest.mark.asyncio
async def test_suppress_and_fix_all(client: LanguageClient):
    text = BUGGY + "y = jnp.zeros(2)\ny[1] = 2.0  # noqa: JG104\nprint(jnp.sum([1, 2]))\n"
    uri = _open(client, client.workspace_folder / "many.py", text)
    found = await _diagnostics(client, uri, 1)
    assert [d.code for d in found] == ["JG301", "JG301", "JG501"]
    second = found[1]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=second.range,
        context=types.CodeActionContext(diagnostics=[second])))
    suppress = next(a for a in actions if a.title.startswith("Suppress"))
    suppressed = _apply(text, suppress.edit.changes[uri])
    assert "y[1] = 2.0  # noqa: JG104, JG301\n" in suppressed

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=found[0].range,
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.jaxguard"])))
    (fix_all,) = actions
    everything = _apply(text, fix_all.edit.changes[uri])
    assert "x = x.at[0].set(1.0)" in everything and "y = y.at[1].set(2.0)" in everything
    assert "jnp.sum(jnp.asarray([1, 2]))" in everything
    _change(client, uri, everything, 2)
    assert await _diagnostics(client, uri, 2) == []


@pytest.mark.asyncio
async def test_excluded_files_and_other_languages_get_nothing(client: LanguageClient):
    uri = _open(client, client.workspace_folder / "generated" / "out.py", BUGGY)
    assert await _diagnostics(client, uri, 1) == []


@pytest.mark.asyncio
async def test_a_bad_configuration_is_one_message_and_the_server_lives_on(client: LanguageClient):
    (client.workspace_folder / "pyproject.toml").write_text("[tool.jaxguard]\nselcet = ['JG3']\n")
    uri = _open(client, client.workspace_folder / "bad.py", BUGGY)
    assert await _diagnostics(client, uri, 1) == []
    assert any("unknown key 'selcet'" in message.message for message in client.messages)
    # fixed on disk: re-read at the next check
    (client.workspace_folder / "pyproject.toml").write_text("[tool.jaxguard]\nselect = ['JG3']\n")
    _change(client, uri, BUGGY + "\n", 2)
    assert [d.code for d in await _diagnostics(client, uri, 2)] == ["JG301"]


@pytest.mark.asyncio
async def test_an_edit_in_one_open_file_reaches_the_files_that_depend_on_it(client: LanguageClient):
    root = client.workspace_folder
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    net = "def apply_fn(params, x):\n    print(x)\n    return params * x\n"
    net_uri = _open(client, root / "pkg" / "net.py", net)
    assert await _diagnostics(client, net_uri, 1) == []  # nobody traces apply_fn yet
    runner = "from .net import apply_fn\n\nupdate = apply_fn\n"
    runner_uri = _open(client, root / "pkg" / "runner.py", runner)
    await _diagnostics(client, runner_uri, 1)
    # unsaved: the runner now jits apply_fn, so its print runs at trace time
    _change(client, runner_uri, "import jax\nfrom .net import apply_fn\n\nupdate = jax.jit(apply_fn)\n", 2)
    await _diagnostics(client, runner_uri, 2)
    for _ in range(100):
        if [d.code for d in client.diagnostics.get(net_uri, [])] == ["JG101"]:
            break
        await asyncio.sleep(0.05)
    assert [d.code for d in client.diagnostics[net_uri]] == ["JG101"]
