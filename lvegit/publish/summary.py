"""One row per LVE for `lvegit list`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lvegit.lve.ids import id_of
from lvegit.lve.instances import count_lines
from lvegit.lve.repo import Repository
from lvegit.lve.spec import instance_files, load_lve


def summarize_lves(repo: Repository, lve_dirs: list[Path]) -> list[dict[str, Any]]:
    rows = []
    for lve_dir in lve_dirs:
        lve, problems, _text = load_lve(repo, lve_dir)
        category, name = repo.category_and_name(lve_dir)
        rows.append(
            {
                "id": id_of(repo, lve_dir),
                "path": repo.relative(lve_dir),
                "category": category,
                "name": name,
                "model": lve.model if lve and lve.model else None,
                "checker": lve.checker_name if lve and lve.checker_name else None,
                "prompt": ("multi_run_prompt" if lve.is_multi_run else "prompt") if lve else None,
                "instances": sum(count_lines(p) for p in instance_files(lve_dir)),
                "description": lve.description if lve and lve.description else None,
                "loads": lve is not None and not problems.errors,
            }
        )
    return rows
