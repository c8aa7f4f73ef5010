"""`accel-lint server`: the Language Server Protocol over stdio (pygls).

Diagnostics on open, change and save with the settings `check` would use for
the file (the same discovery from the file's folder); a code action per fix
(safe ones as preferred quick fixes, unsafe ones marked), "fix all" as a
`source.fixAll` action, "suppress with noqa"; hover with the rule's summary and
page; notebooks through the notebook document sync, linted as one program
across their code cells. The engine runs in this process: nothing is started
per keystroke, and a file that does not parse gets its ACL000 while the server
goes on serving.
"""

from __future__ import annotations

import gc
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from accel_lint import __version__, noqa
from accel_lint.baseline import Baseline, BaselineError
from accel_lint.config import ConfigError, Settings, load_settings
from accel_lint.diagnostic import Diagnostic, Edit, FixView, parse_error
from accel_lint.engine import analyze, fix_edits, rules_for, text_edits
from accel_lint.files import too_large
from accel_lint.incremental import Reparser
from accel_lint.lint import fix_bytes, lint_bytes, lint_program
from accel_lint.notebook import mask_cell
from accel_lint.pages import page_url
from accel_lint.rules import BY_CODE
from accel_lint.source import decode

SOURCE = "accel-lint"
FIX_ALL = types.CodeActionKind.SourceFixAll + ".accel-lint"


@dataclass
class Linted:
    """The last diagnostics of one document, with the fixes code actions offer."""

    version: int | None
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass(frozen=True)
class CellLines:
    """Where a notebook cell's lines sit in the program its code cells make."""

    uri: str
    first: int  # 1-based row of the cell's first line in the program
    count: int


class AccelLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "accel-lint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[
                    types.NotebookDocumentFilterWithCells(
                        notebook="jupyter-notebook",
                        cells=[types.NotebookCellLanguage(language="python")],
                    )
                ],
                save=True,
            ),
        )
        self.linted: dict[str, Linted] = {}  # by text document (or cell) URI
        self.reparsers: dict[str, Reparser] = {}  # by document (or notebook) URI
        self._settings: dict[Path, Settings] = {}

    # -- settings: what `check` would use for a file in that folder -------------
    def settings_for(self, path: Path) -> Settings:
        folder = path.parent
        cached = self._settings.get(folder)
        if cached is None:
            cached = load_settings(search_from=folder)
            self._settings[folder] = cached
        return cached

    def forget_settings(self) -> None:
        self._settings.clear()

    # -- linting --------------------------------------------------------------
    def lint_text(self, uri: str, text: str, program: bool = False) -> list[Diagnostic] | None:
        """Diagnostics of `text` as the file at `uri`; None when the file is excluded
        or the settings cannot be read (said to the user once, as a message)."""
        path = uri_path(uri)
        try:
            settings = self.settings_for(path)
        except ConfigError as exc:
            self.window_show_message(
                types.ShowMessageParams(types.MessageType.Error, f"accel-lint: {exc}")
            )
            return None
        if settings.is_excluded(path):
            return []
        # the limits of `check`: a document it would refuse is refused here, before a
        # parse that would hold the editor for seconds and gigabytes
        large = too_large(len(text.encode("utf-8")), "the notebook's code" if program else "file")
        if large is not None:
            self.reparsers.pop(uri, None)  # what a smaller version of it held
            return [parse_error(str(path), large)]
        # Edits are computed when a code action asks for them: each costs a transform
        # of the whole tree, too much to pay for every finding on every keystroke.
        # the document's last parse: an edit reparses only the statements it touched
        reparser = self.reparsers.setdefault(uri, Reparser())
        if program:  # a notebook's code cells as Python, not the notebook's JSON
            report = lint_program(str(path), text, settings, reparser)
        else:
            report = lint_bytes(str(path), text.encode("utf-8"), settings, reparser=reparser)
        if report.internal_error is not None:
            self.window_log_message(
                types.LogMessageParams(
                    types.MessageType.Error, f"accel-lint internal error:\n{report.internal_error}"
                )
            )
        if settings.baseline is None:
            return report.diagnostics
        # `baseline = "FILE"`: only what the baseline does not record, as `check` shows
        try:
            baseline = Baseline.load(settings.baseline)
        except BaselineError as exc:
            self.window_show_message(
                types.ShowMessageParams(types.MessageType.Error, f"accel-lint: {exc}")
            )
            return report.diagnostics
        lines = text.splitlines()
        kept, _ = baseline.split(
            report.diagnostics,
            lambda d: lines[d.row - 1] if 0 < d.row <= len(lines) else "",
        )
        return kept

    def publish_document(self, document: TextDocument) -> None:
        found = self.lint_text(document.uri, document.source)
        if found is None:
            return
        self.linted[document.uri] = Linted(document.version, found)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=document.uri,
                version=document.version,
                diagnostics=lsp_diagnostics(document, found),
            )
        )

    def publish_notebook(self, notebook: types.NotebookDocument) -> None:
        program, cells = self.notebook_program(notebook)
        found = self.lint_text(notebook.uri, program, program=True)
        if found is None:
            return
        by_cell: dict[str, list[Diagnostic]] = {cell.uri: [] for cell in cells}
        for diagnostic in found:
            placed = in_cell(diagnostic, cells)
            if placed is not None:
                by_cell[placed[0]].append(placed[1])
        for uri, diagnostics in by_cell.items():
            document = self.workspace.get_text_document(uri)
            self.linted[uri] = Linted(document.version, diagnostics)
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(
                    uri=uri, diagnostics=lsp_diagnostics(document, diagnostics)
                )
            )

    def notebook_program(self, notebook: types.NotebookDocument) -> tuple[str, list[CellLines]]:
        """The code cells joined as one program, IPython's own lines masked as `fix`
        masks them, so that the rest parses; a cell magic (`%%bash`) hides its cell."""
        parts: list[str] = []
        cells: list[CellLines] = []
        row = 1
        for cell in notebook.cells:
            if cell.kind != types.NotebookCellKind.Code:
                continue
            text = self.workspace.get_text_document(cell.document).source
            masked = mask_cell(text).splitlines() or [""]
            cells.append(CellLines(cell.document, row, len(masked)))
            parts.append("\n".join(masked) + "\n")
            row += len(masked)
        return "".join(parts), cells

    def with_fixes(self, uri: str, wanted: list[Diagnostic]) -> list[Diagnostic]:
        """`wanted` with their fix edits, from a fresh analysis of the document (or,
        for a notebook cell, of its notebook's program)."""
        if not any(d.has_fix for d in wanted):
            return wanted
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is not None:
            program, cells = self.notebook_program(notebook)
            shift = next((c.first - 1 for c in cells if c.uri == uri), 0)
            fixed = fixes_for(
                uri_path(notebook.uri),
                program,
                self.settings_for(uri_path(notebook.uri)),
                [replace(d, row=d.row + shift, end_row=d.end_row + shift) for d in wanted],
            )
            placed = [in_cell(d, cells) for d in fixed]
            return [p[1] for p in placed if p is not None and p[0] == uri]
        document = self.workspace.get_text_document(uri)
        path = uri_path(uri)
        return fixes_for(path, document.source, self.settings_for(path), wanted)

    def diagnostics_at(self, uri: str, rng: types.Range) -> list[Diagnostic]:
        document = self.workspace.get_text_document(uri)
        linted = self.linted.get(uri)
        if linted is None:
            return []
        lines = document.lines
        return [d for d in linted.diagnostics if overlaps(lsp_range(document, d, lines), rng)]


def fixes_for(
    path: Path, text: str, settings: Settings, wanted: list[Diagnostic]
) -> list[Diagnostic]:
    """`wanted` (diagnostics of `text`) with the edits of their fixes; one analysis,
    and one tree transform per wanted fix only."""
    data = text.encode("utf-8")
    rules = rules_for(settings.codes_for(path), data, str(path))
    analysis = analyze(str(path), decode(data), settings, rules)
    by_place = {(d.code, d.row, d.column): d for d in wanted}
    out = []
    for finding in analysis.findings:
        start = analysis.range_of(finding.node).start
        diagnostic = by_place.pop((finding.code, start.line, start.column + 1), None)
        if diagnostic is None or finding.fix is None or finding.fix.safety is None:
            continue
        edits = fix_edits(analysis, finding.fix)
        if isinstance(edits, str):
            # the fix checker refuses this fix: no code action, and the reason said
            out.append(
                replace(
                    diagnostic,
                    fix=None,
                    has_fix=False,
                    fix_safety=None,
                    fix_message=None,
                    no_fix_reason=edits,
                )
            )
            continue
        view = FixView(finding.fix.safety.value, finding.fix.message, tuple(edits))
        out.append(replace(diagnostic, fix=view))
    return out + list(by_place.values())


def moved(edits: Iterable[Edit], shift: int) -> tuple[Edit, ...]:
    return tuple(
        Edit(e.content, e.row - shift, e.column, e.end_row - shift, e.end_column) for e in edits
    )


def in_cell(diagnostic: Diagnostic, cells: Sequence[CellLines]) -> tuple[str, Diagnostic] | None:
    """The cell a program diagnostic falls in, with rows relative to that cell;
    None when it falls between cells (cannot happen for a finding of the code)."""
    for cell in cells:
        if cell.first <= diagnostic.row < cell.first + cell.count:
            shift = cell.first - 1

            fix = diagnostic.fix
            if fix is not None:
                rows = [(e.row, e.end_row) for e in fix.edits]
                if all(cell.first <= a and b < cell.first + cell.count for a, b in rows):
                    fix = replace(fix, edits=moved(fix.edits, shift))
                else:
                    fix = None  # a fix reaching into another cell is left to `fix`
            end_row = min(diagnostic.end_row, cell.first + cell.count - 1)
            return cell.uri, replace(
                diagnostic,
                row=diagnostic.row - shift,
                end_row=end_row - shift,
                fix=fix,
                has_fix=fix is not None,
            )
    return None


def uri_path(uri: str) -> Path:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "vscode-notebook-cell":
        return Path(unquote(parsed.path))
    # an unsaved buffer: settings from the working directory, named like the URI
    return Path.cwd() / (Path(unquote(parsed.path)).name or "untitled.py")


def lsp_range(
    document: TextDocument, diagnostic: Diagnostic | Edit, lines: Sequence[str] | None = None
) -> types.Range:
    """`lines`: the document's lines, when the caller converts many ranges (pygls
    splits the whole text again at each `document.lines`)."""
    rng = types.Range(
        start=types.Position(line=diagnostic.row - 1, character=diagnostic.column - 1),
        end=types.Position(line=diagnostic.end_row - 1, character=diagnostic.end_column - 1),
    )
    # our columns count code points; the client may count UTF-16 units
    return document.position_codec.range_to_client_units(
        document.lines if lines is None else lines, rng
    )


def lsp_diagnostics(document: TextDocument, found: Iterable[Diagnostic]) -> list[types.Diagnostic]:
    lines = document.lines
    return [lsp_diagnostic(document, d, lines) for d in found]


def lsp_diagnostic(
    document: TextDocument, diagnostic: Diagnostic, lines: Sequence[str] | None = None
) -> types.Diagnostic:
    rule = BY_CODE.get(diagnostic.code)
    return types.Diagnostic(
        range=lsp_range(document, diagnostic, lines),
        message=diagnostic.full_message,
        severity=(
            types.DiagnosticSeverity.Error
            if rule is None  # ACL000: the file does not parse
            else types.DiagnosticSeverity.Warning
        ),
        code=diagnostic.code,
        code_description=(
            types.CodeDescription(href=page_url(diagnostic.code)) if rule is not None else None
        ),
        source=SOURCE,
    )


def overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def noqa_edits(document: TextDocument, code: str, row: int) -> list[types.TextEdit]:
    """`# noqa: CODE` at the end of the reported line, or CODE merged into its noqa, as
    `check --add-noqa` writes it (`noqa.add_codes`); none where a comment cannot go
    (inside a multi-line string, after a backslash)."""
    new_text, _, _ = noqa.add_codes(document.source, {row: [code]})
    return client_edits(document, text_edits(document.source, new_text))


def client_edits(document: TextDocument, edits: Iterable[Edit]) -> list[types.TextEdit]:
    lines = document.lines
    return [types.TextEdit(range=lsp_range(document, e, lines), new_text=e.content) for e in edits]


def code_actions(server: AccelLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    document = server.workspace.get_text_document(uri)
    only = params.context.only
    actions: list[types.CodeAction] = []
    wanted = {d.code for d in params.context.diagnostics if d.source == SOURCE}
    if only is None or any(kind.startswith(types.CodeActionKind.QuickFix) for kind in only):
        here = [
            d for d in server.diagnostics_at(uri, params.range) if not wanted or d.code in wanted
        ]
        for diagnostic in server.with_fixes(uri, here):
            shown = lsp_diagnostic(document, diagnostic)
            fix = diagnostic.fix
            if fix is not None:
                unsafe = fix.applicability != "safe"
                actions.append(
                    types.CodeAction(
                        title=f"{diagnostic.code}: {fix.message}" + (" (unsafe)" if unsafe else ""),
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[shown],
                        is_preferred=not unsafe,
                        edit=types.WorkspaceEdit(changes={uri: client_edits(document, fix.edits)}),
                    )
                )
            suppress = (
                noqa_edits(document, diagnostic.code, diagnostic.row)
                if diagnostic.code in BY_CODE
                else []
            )
            if suppress:
                actions.append(
                    types.CodeAction(
                        title=f"{diagnostic.code}: suppress with `# noqa: {diagnostic.code}`",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[shown],
                        edit=types.WorkspaceEdit(changes={uri: suppress}),
                    )
                )
    if only is None or any(FIX_ALL.startswith(kind) or kind.startswith(FIX_ALL) for kind in only):
        fix_all = fix_all_action(server, document)
        if fix_all is not None:
            actions.append(fix_all)
    return actions


def fix_all_action(server: AccelLintServer, document: TextDocument) -> types.CodeAction | None:
    """Every fix the settings allow (safe ones, unsafe ones too with unsafe-fixes),
    applied as `fix` would, to a document of plain Python (not a notebook cell)."""
    if server.workspace.get_notebook_document(cell_uri=document.uri) is not None:
        return None
    path = uri_path(document.uri)
    try:
        settings = server.settings_for(path)
    except ConfigError:
        return None
    report = fix_bytes(str(path), document.source.encode("utf-8"), settings)
    if report.fixed is None:
        return None
    new_text = report.fixed.decode("utf-8")
    edits = text_edits(document.source, new_text)
    return types.CodeAction(
        title=f"accel-lint: fix all ({report.applied} fix{'es' if report.applied != 1 else ''})",
        kind=FIX_ALL,
        edit=types.WorkspaceEdit(changes={document.uri: client_edits(document, edits)}),
    )


def hover(server: AccelLintServer, params: types.HoverParams) -> types.Hover | None:
    position = types.Range(start=params.position, end=params.position)
    found = server.diagnostics_at(params.text_document.uri, position)
    parts = []
    for diagnostic in found:
        rule = BY_CODE.get(diagnostic.code)
        if rule is None:
            continue
        rule_class = rule.rule
        parts.append(
            f"**{rule_class.code}** `{rule_class.name}`: {rule_class.summary}\n\n"
            f"Fix: {rule_class.fix_safety.value}. "
            f"[{rule_class.code} explained]({page_url(rule_class.code)})"
        )
    if not parts:
        return None
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)
        )
    )


def release_memory() -> None:
    """After a document closes: its tree's objects collected, and the heap's free
    pages handed back to the system (glibc keeps them otherwise: a closed 4 MB file
    left the server at gigabytes)."""
    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):  # pragma: no cover - not glibc
            pass


def build() -> AccelLintServer:
    server = AccelLintServer()

    def log_failure(action: str) -> None:
        server.window_log_message(
            types.LogMessageParams(
                types.MessageType.Error, f"accel-lint: {action} failed:\n{traceback.format_exc()}"
            )
        )

    def guarded(action: str, run: Callable[[], None]) -> None:
        try:
            run()
        except Exception:  # a bug of ours must not end the editor's session
            log_failure(action)

    def publish(uri: str) -> None:
        if server.workspace.get_notebook_document(cell_uri=uri) is not None:
            return  # cells are linted with their notebook
        guarded("lint", lambda: server.publish_document(server.workspace.get_text_document(uri)))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AccelLintServer, params: types.DidOpenTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AccelLintServer, params: types.DidChangeTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AccelLintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.forget_settings()  # a saved pyproject.toml changes what applies
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AccelLintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.linted.pop(params.text_document.uri, None)
        ls.reparsers.pop(params.text_document.uri, None)
        release_memory()
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
        )

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: AccelLintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        """What a closed notebook held goes: its program's parse, its cells' findings."""
        ls.reparsers.pop(params.notebook_document.uri, None)
        for cell in params.cell_text_documents:
            ls.linted.pop(cell.uri, None)
        release_memory()
        for cell in params.cell_text_documents:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[])
            )

    def publish_notebook(uri: str) -> None:
        notebook = server.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            guarded("lint", lambda: server.publish_notebook(notebook))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: AccelLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        publish_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: AccelLintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        publish_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: AccelLintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.forget_settings()
        publish_notebook(params.notebook_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL],
            resolve_provider=False,
        ),
    )
    def code_action(
        ls: AccelLintServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        try:
            return code_actions(ls, params)
        except Exception:
            log_failure("code actions")
            return None

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: AccelLintServer, params: types.HoverParams) -> types.Hover | None:
        try:
            return hover(ls, params)
        except Exception:
            log_failure("hover")
            return None

    return server


def serve() -> None:
    build().start_io()
