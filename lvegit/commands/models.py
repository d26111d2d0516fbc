from __future__ import annotations

from pathlib import Path

import click

from lvegit.base.errors import EXIT_FINDINGS, EXIT_OK
from lvegit.base.extras import require
from lvegit.base.output import count, line, note, print_json
from lvegit.checkers.model_stack import download, needed_models
from lvegit.commands.catalog import short_help
from lvegit.commands.options import (
    Selection,
    current_settings,
    lve_command_options,
    open_repository,
)
from lvegit.judge.cache import open_cache
from lvegit.lve.repo import named_checker


@click.command("models", short_help=short_help("models"))
@lve_command_options(
    click.option(
        "--download",
        "fetch",
        is_flag=True,
        help="Download the models the local Hugging Face cache lacks (files only, in lvegit's own process).",
    )
)
def models_command(selection: Selection, fetch: bool, output_format: str, repo_path: Path | None) -> int:
    """List the Hugging Face hub models the selected LVEs' checkers judge with, and whether the local hub
    cache holds them: a core classifier's from its arguments, a custom checker's from what it asked for
    the last time it ran (lvegit check records it). A checker whose model is missing is skipped.

    With --download, lvegit fetches what is missing into the hub cache: files only, no code of the model
    or of an LVE runs, and checkers then load it offline inside their sandbox. In CI, cache the hub cache
    keyed on this list (see the workflow templates). Exit code 1 when a model is still missing.

    \b
    Examples:
      lvegit models --all
      lvegit models --all --download
      lvegit models repository/toxicity --format json
    """
    repo = open_repository(repo_path)
    lve_dirs = selection.resolve(repo)
    cache, _unused = open_cache(repo.root, current_settings().cache)
    named = [(repo.relative(lve_dir), named_checker(repo, lve_dir)) for lve_dir in lve_dirs]
    asked = {rel: cache.hub_models(rel) for rel, _checker in named} if cache is not None else {}
    found = needed_models(named, asked)
    if fetch:
        if any(not needed.cached for needed in found):
            require("--download", "transformers", "huggingface_hub")
        for needed in found:
            if not needed.cached:
                note(f"downloading {needed.model}")
                try:
                    download(needed.model)
                except Exception as exc:  # the hub's answer, whatever its kind: said, and the next goes on
                    note(f"cannot download {needed.model}: {type(exc).__name__}: {exc}")
        found = needed_models(named, asked)  # what the downloads brought
    missing = [needed for needed in found if not needed.cached]
    if output_format == "json":
        from lvegit.publish.documents import models_document  # pydantic: only for the JSON document

        print_json(models_document(found))
    else:
        for needed in found:
            state = "cached" if needed.cached else "missing"
            line(f"{needed.model}: {state} ({count(len(needed.lves), 'LVE')}: {', '.join(needed.lves)})")
        line(f"{count(len(found), 'hub model')}: {len(found) - len(missing)} cached, {len(missing)} missing")
    return EXIT_FINDINGS if missing else EXIT_OK
