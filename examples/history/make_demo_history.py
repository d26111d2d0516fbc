"""Make the bundled repository's demo history (history/ at the project root): six weekly runs of three
LVEs on `demo/assistant`, a loopback OpenAI-compatible server that is version v1 for three runs and v2
for three, so that `lvegit status` and the site have something to show:

- reliability/strings/letter_count: v1 miscounts letters, v2 counts right: *fixed in* demo-assistant-v2;
- reliability/arithmetic/multiply: v1 multiplies right, v2 is off by one: *regressed in* demo-assistant-v2
  (after 150 clean attempts on v1);
- reliability/consistency/capital_city: both versions name another city when asked another way: *reproduces*.

Run from the project root, after the test set-up: `python examples/history/make_demo_history.py`. It
replaces history/ with the runs it makes (the real pipeline: lvegit run --report, lvegit history add --at).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests")]

from servers import OpenAIServer, last_user_text, serve  # noqa: E402

LVES = [
    "repository/reliability/strings/letter_count/openai--gpt-4o-mini",
    "repository/reliability/arithmetic/multiply/openai--gpt-4o-mini",
    "repository/reliability/consistency/capital_city/openai--gpt-4o-mini",
]
FIRST_RUN = date(2026, 9, 7)
REPEAT = 10


def answer(version: int) -> Any:
    def reply(body: dict[str, Any]) -> str:
        text = last_user_text(body)
        if product := re.search(r"Compute (\d+) \* (\d+)", text):
            a, b = int(product.group(1)), int(product.group(2))
            return str(a * b + (version == 2))
        if letters := re.search(r'letter "(.)" occur in the word "([^"]+)"', text):
            right = letters.group(2).count(letters.group(1))
            return str(right if version == 2 else right + 1)
        return "Sydney." if "seat of government" in text else "Canberra."

    return reply


def main() -> None:
    out = ROOT / "history"
    shutil.rmtree(out, ignore_errors=True)
    server = OpenAIServer()
    with tempfile.TemporaryDirectory() as scratch, contextmanager(serve)(server) as running:
        repo = Path(scratch) / "lves"
        shutil.copytree(ROOT / "repository", repo / "repository")
        shutil.copy(ROOT / ".lverepo", repo / ".lverepo")
        route = f'backend = "openai"\nmodel = "assistant"\nbase_url = "{running.url}"\n'
        (repo / "lvegit.toml").write_text(f'[models."demo/assistant"]\n{route}')
        for run in range(6):
            version = 1 + run // 3
            server.answer, server.version = answer(version), f"demo-assistant-v{version}"
            report = Path(scratch) / f"run-{run}.jsonl"
            lvegit = [sys.executable, "-m", "lvegit"]
            subprocess.run(
                [*lvegit, "run", *LVES, "--model", "demo/assistant", "--repeat", str(REPEAT),
                 "--report", str(report), "--repo", str(repo)],
                check=False, env={**os.environ, "OPENAI_API_KEY": "demo"},
            )  # fmt: skip  # exit 1: the verdicts differ from the recorded ones, as they should
            when = (FIRST_RUN + timedelta(weeks=run)).isoformat() + "T03:17:00Z"
            subprocess.run(
                [*lvegit, "history", "add", str(report), "--at", when, "--history", str(out),
                 "--repo", str(repo)],
                check=True,
            )  # fmt: skip


if __name__ == "__main__":
    main()
