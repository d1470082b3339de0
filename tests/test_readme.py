"""The README's Python example runs as written and shows a shared row (sim.sweep)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_sweep_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    out = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], str(README), "exec"), scope)
    table = scope["table"]
    assert list(table["max_num_batched_tokens"]) == [2048, 8192, 32768, 65536]
    assert (table["run_of"] != table.index).any()  # the example shows a shared row
    assert "run_of" in out.getvalue()
