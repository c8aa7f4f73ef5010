"""`accel-lint server` driven over stdio by an LSP client (pytest-lsp's), as an
editor drives it: diagnostics, code actions applied to the text, hover, a
syntax error and back, a notebook."""

from __future__ import annotations

import asyncio
import re
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402

from tests.support import cli  # noqa: E402

TRAIN = textwrap.dedent(
    """\
    import torch
    from torch.utils.data import DataLoader, Dataset


    class Shards(Dataset):
        def __init__(self, paths):
            self.paths = paths

        def __len__(self):
            return len(self.paths)

        def __getitem__(self, index):
            return torch.load(self.paths[index])


    def main(paths):
        model = torch.nn.Linear(8, 1).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(Shards(paths), batch_size=32, shuffle=True)
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()


    if __name__ == "__main__":
        main(["a.pt", "b.pt"])
    """
)
LOADER_ROW = 18  # 0-based line of the DataLoader call


Client = Any  # pytest_lsp.LanguageClient


@asynccontextmanager
async def session(root: Path) -> AsyncIterator[Client]:
    client = pytest_lsp.make_test_lsp_client()
    await client.start_io(sys.executable, "-m", "accel_lint", "server", cwd=str(root))
    await client.initialize_session(
        types.InitializeParams(
            capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="project")],
        )
    )
    try:
        yield client
    finally:
        await client.shutdown_session()
        await client.stop()


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), timeout=40))


async def opened(client: Client, path: Path, text: str, version: int = 1) -> list[types.Diagnostic]:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=version, text=text
            )
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[uri])


async def changed(client: Client, path: Path, text: str, version: int) -> list[types.Diagnostic]:
    uri = path.as_uri()
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[uri])


def applied(text: str, edits: list[types.TextEdit]) -> str:
    """The text after an editor applies `edits` (UTF-16 columns; ASCII here)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        return starts[position.line] + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
        lines = text.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
    return text


def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.accel-lint]\n", encoding="utf-8")
    return tmp_path / "train.py"


def summary(diagnostics: list[types.Diagnostic]) -> list[tuple[str, int, int, int, int]]:
    return [
        (
            str(d.code),
            d.range.start.line,
            d.range.start.character,
            d.range.end.line,
            d.range.end.character,
        )
        for d in sorted(diagnostics, key=lambda d: (d.range.start.line, str(d.code)))
    ]


def test_diagnostics_code_actions_hover_and_a_syntax_error_and_back(tmp_path: Path) -> None:
    path = project(tmp_path)
    path.write_text(TRAIN, encoding="utf-8")

    async def scenario() -> None:
        async with session(tmp_path) as client:
            found = await opened(client, path, TRAIN)
            assert summary(found) == [
                ("ACL101", LOADER_ROW, 13, LOADER_ROW, 67),
                ("ACL102", LOADER_ROW, 13, LOADER_ROW, 67),
            ]
            by_code = {str(d.code): d for d in found}
            assert by_code["ACL102"].source == "accel-lint"
            assert by_code["ACL102"].severity == types.DiagnosticSeverity.Warning
            assert by_code["ACL102"].code_description is not None
            assert by_code["ACL102"].code_description.href.endswith("/rules/ACL102.md")

            actions = await client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                    range=by_code["ACL102"].range,
                    context=types.CodeActionContext(diagnostics=[by_code["ACL102"]]),
                )
            )
            titles = [a.title for a in actions]
            assert titles[:2] == [
                "ACL102: Add `pin_memory=True`",
                "ACL102: suppress with `# noqa: ACL102`",
            ]
            quick = actions[0]
            assert quick.kind == types.CodeActionKind.QuickFix and quick.is_preferred
            pinned = applied(TRAIN, quick.edit.changes[path.as_uri()])
            assert pinned == TRAIN.replace("shuffle=True)", "shuffle=True, pin_memory=True)")
            noqa = applied(TRAIN, actions[1].edit.changes[path.as_uri()])
            assert noqa.splitlines()[LOADER_ROW].endswith("shuffle=True)  # noqa: ACL102")

            # the unsafe fix is offered, marked, and never preferred
            actions = await client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                    range=by_code["ACL101"].range,
                    context=types.CodeActionContext(diagnostics=[by_code["ACL101"]]),
                )
            )
            unsafe = actions[0]
            assert unsafe.title.startswith("ACL101: ") and unsafe.title.endswith(" (unsafe)")
            assert not unsafe.is_preferred

            # fix all: what `accel-lint fix` writes with the same settings (safe fixes)
            actions = await client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                    range=types.Range(
                        start=types.Position(line=0, character=0),
                        end=types.Position(line=0, character=0),
                    ),
                    context=types.CodeActionContext(
                        diagnostics=[], only=[types.CodeActionKind.SourceFixAll]
                    ),
                )
            )
            assert len(actions) == 1 and actions[0].kind == "source.fixAll.accel-lint"
            fixed = applied(TRAIN, actions[0].edit.changes[path.as_uri()])
            ran = cli("fix", "--apply", str(path), cwd=tmp_path)
            assert fixed == path.read_text(encoding="utf-8") != TRAIN, ran.stdout + ran.stderr
            assert "pin_memory=True" in fixed and "num_workers" not in fixed  # safe fixes only
            said = re.search(r"Fixed (\d+) finding", ran.stdout + ran.stderr)
            assert said is not None, ran.stdout + ran.stderr
            n = int(said.group(1))
            assert actions[0].title == f"accel-lint: fix all ({n} fix{'es' if n != 1 else ''})"

            hover = await client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                    position=types.Position(line=LOADER_ROW, character=20),
                )
            )
            assert hover is not None
            text = hover.contents.value
            assert "**ACL101** `dataloader-sync-loading`" in text
            assert "**ACL102** `dataloader-unpinned-memory`" in text
            assert "/rules/ACL101.md" in text

            # typing: a syntax error is one ACL000, and the server keeps serving
            broken = TRAIN.replace("for x, y in loader:", "for x, y in loader")
            found = await changed(client, path, broken, 2)
            assert [(str(d.code), d.range.start.line) for d in found] == [("ACL000", 19)]
            assert found[0].severity == types.DiagnosticSeverity.Error
            found = await changed(client, path, TRAIN, 3)
            assert [str(d.code) for d in found] == ["ACL101", "ACL102"]

    run(scenario)


def test_settings_are_discovered_as_check_discovers_them(tmp_path: Path) -> None:
    path = project(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.accel-lint]\nignore = ["ACL101"]\n', encoding="utf-8"
    )

    async def scenario() -> None:
        async with session(tmp_path) as client:
            found = await opened(client, path, TRAIN)
            assert [str(d.code) for d in found] == ["ACL102"]

    run(scenario)


NOTEBOOK_CELLS = [
    (types.NotebookCellKind.Markup, "# Training\nA notebook that trains."),
    (types.NotebookCellKind.Code, "%matplotlib inline\nimport torch\n!nvidia-smi"),
    (
        types.NotebookCellKind.Code,
        "from torch.utils.data import DataLoader\n"
        "model = torch.nn.Linear(8, 1).cuda()\n"
        "loader = DataLoader(dataset, batch_size=32)\n"
        "for x in loader:\n"
        "    model(x.cuda()).sum().backward()",
    ),
    (types.NotebookCellKind.Code, "%%bash\nls -l"),
]


def test_a_notebook_is_linted_as_one_program_and_reported_per_cell(tmp_path: Path) -> None:
    project(tmp_path)
    notebook = tmp_path / "train.ipynb"
    cell_uris = [f"vscode-notebook-cell:{notebook}#cell{i}" for i in range(len(NOTEBOOK_CELLS))]

    async def scenario() -> None:
        async with session(tmp_path) as client:
            client.notebook_document_did_open(
                types.DidOpenNotebookDocumentParams(
                    notebook_document=types.NotebookDocument(
                        uri=notebook.as_uri(),
                        notebook_type="jupyter-notebook",
                        version=1,
                        cells=[
                            types.NotebookCell(kind=kind, document=uri)
                            for (kind, _), uri in zip(NOTEBOOK_CELLS, cell_uris, strict=True)
                        ],
                    ),
                    cell_text_documents=[
                        types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
                        for (kind, text), uri in zip(NOTEBOOK_CELLS, cell_uris, strict=True)
                        for language in [
                            "python" if kind == types.NotebookCellKind.Code else "markdown"
                        ]
                    ],
                )
            )
            # one publication per code cell, sent together
            while not all(uri in client.diagnostics for uri in cell_uris[1:]):
                await asyncio.sleep(0.05)
            assert cell_uris[0] not in client.diagnostics  # markdown is not linted
            assert summary(list(client.diagnostics[cell_uris[2]])) == [
                ("ACL101", 2, 9, 2, 43),
                ("ACL102", 2, 9, 2, 43),
            ]
            assert list(client.diagnostics[cell_uris[1]]) == []
            assert list(client.diagnostics[cell_uris[3]]) == []

    run(scenario)


def _rss(pid: int) -> int:
    """Resident memory of a process, in kB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_the_cli_s_size_limit_applies_and_closed_documents_free_their_memory(
    tmp_path: Path,
) -> None:
    """A document `check` refuses (5.3 MB) is one ACL000 at once, not a 35 s parse;
    a closed document's, and a closed notebook's, tree is given back (the server
    kept gigabytes)."""
    project(tmp_path)
    body = "".join(f"value_{i} = compute({i}, scale=[{i}, {i + 1}])\n" for i in range(3_000))
    big = tmp_path / "big.py"
    notebook = tmp_path / "big.ipynb"
    cell_uri = f"vscode-notebook-cell:{notebook}#cell0"
    huge = tmp_path / "huge.py"

    async def scenario() -> None:
        async with session(tmp_path) as client:
            pid = client._server.pid
            found = await opened(client, tmp_path / "warm.py", TRAIN)
            assert found
            before = _rss(pid)
            found = await opened(client, big, TRAIN + body)
            assert [d.code for d in found] == ["ACL101", "ACL102"]
            # the tree and the facts (about 60 MB); the parser's own memory is that of
            # one part of the text (`incremental.parse_in_parts`), given back at once.
            # What stays after the close (about 15 MB, as before the parts) is not the
            # document's: kept, it would be all of `grown`
            grown = _rss(pid) - before
            client.text_document_did_close(
                types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(big.as_uri()))
            )
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            assert _rss(pid) - before < grown / 2, (before, grown, _rss(pid))

            client.notebook_document_did_open(
                types.DidOpenNotebookDocumentParams(
                    notebook_document=types.NotebookDocument(
                        uri=notebook.as_uri(),
                        notebook_type="jupyter-notebook",
                        version=1,
                        cells=[
                            types.NotebookCell(kind=types.NotebookCellKind.Code, document=cell_uri)
                        ],
                    ),
                    cell_text_documents=[
                        types.TextDocumentItem(
                            uri=cell_uri, language_id="python", version=1, text=TRAIN + body
                        )
                    ],
                )
            )
            while cell_uri not in client.diagnostics:
                await asyncio.sleep(0.05)
            assert [d.code for d in client.diagnostics[cell_uri]] == ["ACL101", "ACL102"]
            client.notebook_document_did_close(
                types.DidCloseNotebookDocumentParams(
                    notebook_document=types.NotebookDocumentIdentifier(notebook.as_uri()),
                    cell_text_documents=[types.TextDocumentIdentifier(cell_uri)],
                )
            )
            while list(client.diagnostics[cell_uri]):
                await asyncio.sleep(0.05)
            assert _rss(pid) - before < grown / 2, (before, grown, _rss(pid))

            text = TRAIN + "x = [" + "1, " * 1_800_000 + "]\n"
            assert len(text) > 5.3e6
            found = await opened(client, huge, text)
            assert [(d.code, d.message) for d in found] == [
                ("ACL000", "file is too large to lint (5.4 MB; the limit is 5 MB)")
            ]

    asyncio.run(asyncio.wait_for(scenario(), timeout=120))


def test_a_single_quick_fix_is_laid_out_as_fix_writes_it_and_noqa_goes_where_it_may(
    tmp_path: Path,
) -> None:
    """One layout for every path that writes a fix: the quick fix for one finding splits
    the line it made too long exactly as `accel-lint fix` does; "suppress with noqa" is
    `check --add-noqa`'s (no action where a comment cannot go)."""
    path = project(tmp_path)
    long_train = TRAIN.replace(
        "DataLoader(Shards(paths), batch_size=32, shuffle=True)",
        "DataLoader(Shards(paths), batch_size=32, shuffle=True, drop_last=True, num_workers=4)",
    ).replace("    optimizer = torch", "    spare = 1 + \\\n        2\n    optimizer = torch")
    path.write_text(long_train, encoding="utf-8")
    written = tmp_path / "expected.py"
    written.write_text(long_train, encoding="utf-8")
    ran = cli("fix", "--apply", "--select", "ACL102", "--no-cache", "expected.py", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    expected = written.read_text(encoding="utf-8")
    assert "    loader = DataLoader(\n        Shards(paths)," in expected  # split, as black would
    assert max(map(len, expected.splitlines())) <= max(map(len, long_train.splitlines()))
    row = next(i for i, line in enumerate(long_train.splitlines()) if "DataLoader(Sh" in line)

    async def scenario() -> None:
        async with session(tmp_path) as client:
            found = await opened(client, path, long_train)
            acl102 = next(d for d in found if d.code == "ACL102")
            assert acl102.range.start.line == row
            actions = await client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                    range=acl102.range,
                    context=types.CodeActionContext(diagnostics=[acl102]),
                )
            )
            quick = next(a for a in actions if a.title.startswith("ACL102: Add"))
            assert applied(long_train, quick.edit.changes[path.as_uri()]) == expected
            noqa = next(a for a in actions if "suppress" in a.title)
            suppressed = applied(long_train, noqa.edit.changes[path.as_uri()])
            assert suppressed.splitlines()[row].endswith("num_workers=4)  # noqa: ACL102")

    run(scenario)
