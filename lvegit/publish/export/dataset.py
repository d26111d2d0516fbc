"""`lvegit export --format dataset`: the repository as a dataset, as JailbreakBench or HarmBench publish
theirs: Parquet tables written with pyarrow, and a dataset card (README.md) whose YAML header is what
`datasets.load_dataset(OUT)` reads (license, configs and splits, features). DuckDB, pandas and any Parquet
reader read the tables as they are.

Tables: `instances` (a row per recorded instance: its LVE's path, category, model, checker and arguments,
tags and severity, the filled prompt as chat messages, the stored (postprocessed) response, the verdict,
author and run_info), `lves` (a row per LVE), and on request `runs` (the run history) and `attempts` (run
reports). Fields whose shape differs from LVE to LVE (checker arguments, parameters, run_info) are JSON text.
The same repository gives the same bytes: rows are sorted, nothing about the moment of export is written.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lvegit import __version__
from lvegit.base.errors import LVEError, UsageError
from lvegit.base.escape import markdown
from lvegit.base.extras import missing
from lvegit.base.files import FileProblem, output_folder, write_inside
from lvegit.history.store import arrow_schema, attempt_fields
from lvegit.judge.conversation import prompts_to_send
from lvegit.lve.ids import live_ids
from lvegit.lve.prompt import Message
from lvegit.lve.repo import Repository, repository_url
from lvegit.lve.spec import LVE, load_lve
from lvegit.lve.taxonomy import SCHEMES
from lvegit.run.attempt import Attempt

if TYPE_CHECKING:
    import pyarrow

DATA_DIR: Final = "data"
# A repository's address, linked from the card only when it is a plain https URL (a git remote is the
# repository's own text: no spaces, brackets or invisible characters that could change the link).
PLAIN_URL: Final = re.compile(r"https://[A-Za-z0-9.\-]+(?::\d+)?(?:/[A-Za-z0-9._~\-/%+@]*)?")


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _text(value: Any) -> str | None:
    """A response as text: a string as it is, anything else (variables, a list over runs) as JSON."""
    return value if isinstance(value, str) or value is None else _json(value)


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    return [
        {
            "role": m.role.value,
            "content": m.content,
            "image_url": m.image_url,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls],
            "tool_call_id": m.tool_call_id,
        }
        for m in messages
    ]


def _severity(tags: list[dict[str, Any]]) -> str | None:
    found = [tag.get("value") for tag in tags if tag.get("name") == "severity"]
    return str(found[0]) if found and found[0] is not None else None


def _tags(tags: list[dict[str, Any]]) -> list[dict[str, str | None]]:
    return [
        {"name": str(tag.get("name")), "value": None if tag.get("value") is None else str(tag.get("value"))}
        for tag in tags
    ]


def _filled(lve: LVE, params: dict[str, Any]) -> list[list[dict[str, Any]]] | None:
    """Each run's prompt as sent, parameters filled, without the model's turn; None when it cannot be
    filled (a recorded instance that lacks a parameter)."""
    try:
        runs = prompts_to_send(lve, params)
    except LVEError:
        return None
    return [_messages(m[:-1] if m and m[-1].is_hole else m) for m in runs]


def _template(lve: LVE) -> list[list[dict[str, Any]]]:
    runs = [run.messages for run in lve.runs] if lve.runs is not None else [lve.prompt or []]
    return [_messages(messages) for messages in runs]


def _schemas() -> dict[str, pyarrow.Schema]:
    import pyarrow as pa

    call = pa.struct([("id", pa.string()), ("name", pa.string()), ("arguments", pa.string())])
    message = pa.struct(
        [
            ("role", pa.string()),
            ("content", pa.string()),
            ("image_url", pa.string()),
            ("tool_calls", pa.list_(call)),
            ("tool_call_id", pa.string()),
        ]
    )
    conversations = pa.list_(pa.list_(message))
    tags = pa.list_(pa.struct([("name", pa.string()), ("value", pa.string())]))
    about = [
        ("lve", pa.string()),
        ("id", pa.string()),
        ("category", pa.string()),
        ("name", pa.string()),
        ("model", pa.string()),
        ("checker", pa.string()),
        ("checker_args", pa.string()),
        ("tags", tags),
        ("taxonomy", pa.list_(pa.string())),
        ("severity", pa.string()),
        ("tools", pa.string()),
    ]
    return {
        "instances": pa.schema(
            [
                *about,
                ("prompt", conversations),
                ("parameters", pa.string()),
                ("model_args", pa.string()),
                ("response", pa.string()),
                ("passed", pa.bool_()),
                ("judgement", pa.string()),
                ("author", pa.string()),
                ("run_info", pa.string()),
                ("file", pa.string()),
                ("line", pa.int32()),
            ]
        ),
        "lves": pa.schema(
            [
                *about,
                ("description", pa.string()),
                ("prompt_template", conversations),
                ("prompt_parameters", pa.list_(pa.string())),
                ("default_model_args", pa.string()),
                ("author", pa.string()),
                ("instances", pa.int32()),
                ("unsafe", pa.int32()),
            ]
        ),
        "attempts": pa.schema(
            [
                *attempt_fields(),
                ("status", pa.string()),
                ("passed", pa.bool_()),
                ("response", pa.string()),
                ("error", pa.string()),
                ("started_at", pa.timestamp("ms", tz="UTC")),
            ]
        ),
    }


@dataclass
class Tables:
    rows: dict[str, list[dict[str, Any]]]
    skipped: list[str]  # LVEs whose test.json does not load


def _about(lve: LVE, lve_id: str | None) -> dict[str, Any]:
    return {
        "lve": lve.rel,
        "id": lve_id,
        "category": lve.category,
        "name": lve.name,
        "model": lve.model,
        "checker": lve.checker_name,
        "checker_args": _json(lve.checker_args),
        "tags": _tags(lve.tags),
        "taxonomy": [f"{tag['name']}:{tag.get('value')}" for tag in lve.tags if tag.get("name") in SCHEMES],
        "severity": _severity(lve.tags),
        "tools": _json([tool.as_declared() for tool in lve.tools.values()]) if lve.tools else None,
    }


def repository_tables(repo: Repository) -> Tables:
    tables = Tables({"instances": [], "lves": []}, [])
    ids = live_ids(repo)
    for lve_dir in repo.lve_dirs():
        lve = load_lve(repo, lve_dir)[0]
        if lve is None:
            tables.skipped.append(repo.relative(lve_dir))
            continue
        about = _about(lve, ids.get(lve.rel))
        instances = [instance for recorded in lve.recorded() for instance in recorded.instances]
        for instance in instances:
            params, model_args = lve.split_args(instance.args)
            author = instance.data.get("author")
            tables.rows["instances"].append(
                {
                    **about,
                    "prompt": _filled(lve, params),
                    "parameters": _json(params),
                    "model_args": _json(model_args),
                    "response": _text(instance.response),
                    "passed": instance.passed,
                    "judgement": _json(instance.data.get("judgement")),
                    "author": author if isinstance(author, str) else None,
                    "run_info": _json(instance.data.get("run_info")),
                    "file": instance.file,
                    "line": instance.line,
                }
            )
        tables.rows["lves"].append(
            {
                **about,
                "description": lve.description,
                "prompt_template": _template(lve),
                "prompt_parameters": list(lve.prompt_parameters),
                "default_model_args": _json(lve.default_model_args),
                "author": lve.author,
                "instances": len(instances),
                "unsafe": sum(instance.passed is False for instance in instances),  # not the invalid ones
            }
        )
        lve.forget_recorded()
    return tables


def attempt_rows(attempts: list[Attempt]) -> list[dict[str, Any]]:
    import datetime

    return [
        {
            "lve": a.lve,
            "model": a.model,
            "version": a.resolved_model,
            "file": a.source_file,
            "line": a.source_line,
            "repetition": a.repetition,
            "status": a.status,
            "passed": a.verdict,
            "response": _text(a.response),
            "error": a.error,
            "started_at": None
            if a.started_at is None
            else datetime.datetime.fromtimestamp(a.started_at, datetime.UTC),
        }
        for a in attempts
    ]


def features(schema: pyarrow.Schema) -> list[dict[str, Any]]:
    """The `features` of a dataset card (as `datasets` writes them) for a table of this schema."""
    return [{"name": field.name, **_feature(field.type)} for field in schema]


def _feature(arrow_type: Any) -> dict[str, Any]:
    import pyarrow as pa

    if pa.types.is_list(arrow_type):
        return {"list": _item(arrow_type.value_type)}
    if pa.types.is_struct(arrow_type):
        return {"struct": [{"name": f.name, **_feature(f.type)} for f in arrow_type]}
    return {"dtype": _dtype(arrow_type)}


def _item(arrow_type: Any) -> Any:
    """A list's items: a struct's fields, a nested list, or a plain type's name."""
    import pyarrow as pa

    if pa.types.is_list(arrow_type):
        return {"list": _item(arrow_type.value_type)}
    if pa.types.is_struct(arrow_type):
        return [{"name": f.name, **_feature(f.type)} for f in arrow_type]
    return _dtype(arrow_type)


def _dtype(arrow_type: Any) -> str:
    return {"double": "float64", "float": "float32"}.get(str(arrow_type), str(arrow_type))


def yaml_text(value: Any, indent: int = 0) -> str:
    """Block YAML of dicts, lists, strings, numbers and booleans: the dataset card's header. Strings are
    written as JSON strings, which YAML reads as they are (no PyYAML needed to write a card)."""
    pad = " " * indent
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{key}:\n{yaml_text(item, indent + 2)}")
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
        return "\n".join(lines)
    if isinstance(value, list):
        lines = []
        for item in value:
            if isinstance(item, dict) and item:
                body = yaml_text(item, indent + 2)
                lines.append(f"{pad}- {body[indent + 2 :]}")
            else:
                lines.append(f"{pad}- {_scalar(item)}")
        return "\n".join(lines)
    return pad + _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict | list):
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(str(value))  # ASCII: nothing invisible or reordering reaches the header


MARKER: Final = ".lvegit-dataset"  # in a folder lvegit wrote: an export may replace its files

# What each column holds, for the card.
COLUMNS: Final[dict[str, str]] = {
    "lve": "the LVE's folder in the repository",
    "category": "the first folder under repository/",
    "name": "the LVE's name (the folder above the model's)",
    "model": "the model the LVE was found on",
    "checker": "the checker's class name",
    "checker_args": "the checker's arguments (JSON)",
    "id": "the LVE's stable id (LVE-2026-0042), once given",
    "tags": "the LVE's tags",
    "taxonomy": "its taxonomy tags as SCHEME:VALUE (owasp-llm:2025:LLM01, atlas:AML.T0051)",
    "severity": "the value of the tag `severity`",
    "prompt": "the prompt as sent, parameters filled in: a conversation per run (one for most LVEs)",
    "parameters": "the instance's prompt parameters (JSON)",
    "model_args": "the model arguments it was recorded with (JSON)",
    "response": "the response as stored, postprocessed (JSON when not a single text; a turn that used "
    "tools is {steps: [{content, tool_calls: [{id, name, arguments, result}]}]})",
    "tools": "the tools the model is offered, each with what it returns (JSON; null without tools)",
    "passed": "the verdict: true when the response is safe (null: invalid, it could not be judged)",
    "judgement": "what an LLM judge answered (JSON), for LLM-judged LVEs",
    "author": "who recorded it, or wrote the LVE",
    "run_info": "how it was recorded (JSON)",
    "file": "the instance file",
    "line": "the line in the instance file",
    "description": "what the LVE shows",
    "prompt_template": "the prompt with its {parameters}: a conversation per run",
    "prompt_parameters": "the parameters' names",
    "default_model_args": "the model arguments of every instance (JSON)",
    "instances": "recorded instances",
    "unsafe": "recorded instances that are unsafe",
    "version": "the model version that answered",
    "repetition": "which repetition of the instance",
    "status": "complete, error or skipped",
    "error": "why the attempt failed",
    "started_at": "when the attempt started",
    "run": "the run's file name",
    "run_at": "when the run started",
}
# Where a table's column means something else than the same name elsewhere.
TABLE_COLUMNS: Final[dict[str, dict[str, str]]] = {
    "runs": {
        "unsafe": "whether the attempt was unsafe (null: it ended in an error)",
        "invalid": "whether its verdict is invalid, the output could not be judged (then unsafe is null too; "
        "null: a run stored before lvegit told these from errors)",
        "model": "the model asked",
    },
    "attempts": {"passed": "the verdict (null: no verdict)", "model": "the model asked"},
}


@dataclass(frozen=True)
class Dataset:
    folder: Path
    rows: dict[str, int]  # rows of each table
    skipped: list[str]  # LVEs whose test.json does not load


def write_dataset(
    repo: Repository,
    out: Path,
    title: str,
    license_id: str,
    history: Path | None,
    attempts: list[Attempt],
) -> Dataset:
    """Write the dataset of `repo` into `out` (an empty folder, or one an earlier export wrote)."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise UsageError(f"{out} is not empty and holds no dataset written by lvegit: choose an empty folder")
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise missing("--format dataset", "data", exc.name or "pyarrow") from None
    tables = repository_tables(repo)
    schemas = _schemas()
    arrow = {name: pa.Table.from_pylist(rows, schemas[name]) for name, rows in tables.rows.items()}
    if attempts:
        arrow["attempts"] = pa.Table.from_pylist(attempt_rows(attempts), schemas["attempts"])
    if history is not None:
        arrow["runs"] = _history_table(history)
    try:
        output_folder(out, "the dataset folder")
        write_inside(out, out / MARKER, b"written by lvegit export --format dataset\n", "the dataset folder")
        for name, table in arrow.items():
            write_inside(out, out / DATA_DIR / f"{name}.parquet", _parquet(table), "the dataset folder")
        card = dataset_card(title, license_id, arrow, repository_url(repo))
        write_inside(out, out / "README.md", card.encode("utf-8"), "the dataset folder")
    except FileProblem as exc:
        raise UsageError(f"cannot write the dataset: {exc}") from None
    return Dataset(out, {name: table.num_rows for name, table in arrow.items()}, tables.skipped)


def _history_table(folder: Path) -> pyarrow.Table:
    """Every run of the history, in one table (sorted: the same history gives the same bytes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lvegit.history.status import History

    history = History.open(folder)
    if not history.files:
        raise UsageError(f"--history: no runs in {folder}")
    # a run of the first layout has no `invalid`: null there (it did not tell invalid verdicts from errors)
    table = pa.concat_tables([pq.read_table(file.path) for file in history.files], promote_options="default")
    keys = [(name, "ascending") for name in ("run_at", "lve", "model", "file", "line", "repetition")]
    schema = arrow_schema(any(file.counts_invalid for file in history.files))
    return table.cast(schema).sort_by(keys).replace_schema_metadata(None)


def _parquet(table: pyarrow.Table) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return bytes(sink.getvalue().to_pybytes())


def dataset_card(title: str, license_id: str, tables: dict[str, Any], source: str | None) -> str:
    """README.md: the YAML header `datasets` reads, then what the dataset is and how to load it."""
    header = {
        "license": license_id,
        "pretty_name": title,
        "tags": ["lve", "llm-safety", "red-teaming", "lvegit"],
        "configs": [
            {
                "config_name": name,
                **({"default": True} if name == "instances" else {}),
                "data_files": [{"split": "train", "path": f"{DATA_DIR}/{name}.parquet"}],
            }
            for name in tables
        ],
        "dataset_info": [
            {
                "config_name": name,
                "features": features(table.schema),
                "splits": [{"name": "train", "num_bytes": table.nbytes, "num_examples": table.num_rows}],
            }
            for name, table in tables.items()
        ],
    }
    counts = ", ".join(f"{table.num_rows:,} {name}" for name, table in tables.items())
    link = source is not None and PLAIN_URL.fullmatch(source) is not None
    return str(
        _card_template().render(
            header=header, title=title, source=source, link=link, counts=counts, tables=tables
        )
    )


@functools.cache
def _card_template() -> Any:
    """templates/dataset_card.md (in lvegit.publish)."""
    from lvegit.base.templates import environment

    made = environment("lvegit.publish", autoescape=False, filters={"md": markdown, "yaml": yaml_text})
    made.globals.update(version=__version__, columns=lambda name: {**COLUMNS, **TABLE_COLUMNS.get(name, {})})
    return made.get_template("dataset_card.md")
