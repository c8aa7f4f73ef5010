"""Time from an edit to its diagnostics in `accel-lint server` on a 1,000-line file.

Starts the real server over stdio (pygls's client), opens a training script of
about 1,000 lines, then sends edits one at a time (a full-document change that
alters one number, as typing does) and measures, for each, the wall time from
sending `didChange` to receiving its `publishDiagnostics`. It also reports the
CPU time the server spends on the same edits (the engine in process, no
stdio), which does not depend on what else the machine runs.

    python benchmarks/bench_server.py --edits 50
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

BLOCK = textwrap.dedent(
    """\


    class Shards{n}(Dataset):
        def __init__(self, paths):
            self.paths = paths

        def __len__(self):
            return len(self.paths)

        def __getitem__(self, index):
            return torch.load(self.paths[index])


    class Net{n}(nn.Module):
        def __init__(self, width={width}):
            super().__init__()
            self.conv = nn.Conv2d(3, width, 3, padding=1)
            self.bn = nn.BatchNorm2d(width)
            self.head = nn.Linear(width, 10)

        def forward(self, x):
            x = torch.relu(self.bn(self.conv(x)))
            return self.head(x.mean(dim=(2, 3)))


    def train{n}(paths, epochs=2):
        model = Net{n}().cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loader = DataLoader(Shards{n}(paths), batch_size=32, shuffle=True)
        for epoch in range(epochs):
            total = 0.0
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                optimizer.zero_grad()
                loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss
            print(epoch, total)
    """
)
HEADER = "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader, Dataset\n"


def training_file(lines: int) -> str:
    parts, n = [HEADER], 0
    while sum(part.count("\n") for part in parts) < lines:
        parts.append(BLOCK.format(n=n, width=16))
        n += 1
    return "".join(parts)


def edited(text: str, k: int) -> str:
    # typing in the middle of the file: one constructor argument changes
    return text.replace("width=16", f"width={16 + k}", 1 + k % 5)


async def over_stdio(text: str, edits: int, root: Path) -> list[float]:
    client = LanguageClient("bench", "1")
    received: asyncio.Queue[float] = asyncio.Queue()

    def _diagnostics(params: types.PublishDiagnosticsParams) -> None:
        received.put_nowait(time.perf_counter())

    client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(_diagnostics)

    await client.start_io(sys.executable, "-m", "accel_lint", "server", cwd=str(root))
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri())
    )
    client.initialized(types.InitializedParams())
    uri = (root / "train.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=text
            )
        )
    )
    await received.get()  # the open: imports and first parse are not an edit's cost
    latencies = []
    for k in range(1, edits + 1):
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=k + 1),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(text=edited(text, k))
                ],
            )
        )
        latencies.append(await received.get() - sent)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()  # type: ignore[no-untyped-call]
    return latencies


def in_process(text: str, edits: int, root: Path) -> list[float]:
    """CPU seconds of the server's own work per edit: settings, lint, positions."""
    from accel_lint.server import AccelLintServer

    server = AccelLintServer()
    uri = (root / "train.py").as_uri()
    server.lint_text(uri, text)
    costs = []
    for k in range(1, edits + 1):
        started = time.process_time()
        server.lint_text(uri, edited(text, k))
        costs.append(time.process_time() - started)
    return costs


def describe(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p90 = ms[int(0.9 * (len(ms) - 1))]
    return (
        f"{name}: median {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms, "
        f"min {ms[0]:.1f} ms, max {ms[-1]:.1f} ms ({len(ms)} edits)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=30)
    args = parser.parse_args()
    text = training_file(args.lines)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text("[tool.accel-lint]\n", encoding="utf-8")
        wall = asyncio.run(over_stdio(text, args.edits, root))
        cpu = in_process(text, args.edits, root)
    print(f"file: {text.count(chr(10))} lines, {len(text.encode())} bytes")
    print(describe("edit -> diagnostics over stdio (wall)", wall))
    print(describe("server work per edit (CPU)", cpu))


if __name__ == "__main__":
    main()
