"""lvegit history add/list and lvegit status on real runs against the loopback model server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from builders import RepoBuilder, history_run, instance, shipped_schema_accepts
from servers import Running


def _run(cli: Any, repo: RepoBuilder, report: str) -> None:
    ran = cli("run", "--all", "--repeat", "3", "--report", report, cwd=repo.root)
    assert ran.code in (0, 1), ran.err


def test_a_run_goes_into_the_history_once_and_status_reads_it(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    repo.lve("cat/right", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    repo.lve("cat/wrong", instances={"i.jsonl": [instance("100", True, a=99, b=1)]})  # the model says 101
    repo.lve("cat/unrun", instances={"i.jsonl": []})
    _run(cli, repo, "r.jsonl")
    added = cli("history", "add", "r.jsonl", cwd=repo.root)
    assert added.code == 0, added.err
    assert "added 6 attempts (0 failed) of openai/gpt-4o-mini" in added.out
    [file] = (repo.root / "history").iterdir()
    again = cli("history", "add", "r.jsonl", cwd=repo.root)
    assert again.code == 2 and "in the history already" in again.err
    assert list((repo.root / "history").iterdir()) == [file]  # nothing duplicated

    listed = cli("history", "list", cwd=repo.root)
    assert listed.code == 0 and file.name in listed.out and "6 attempts" in listed.out
    assert "gpt-4o-mini-2026-01-01" in listed.out  # the version the server said it was
    document = cli("history", "list", "--format", "json", cwd=repo.root).json()
    shipped_schema_accepts(document, "history")
    assert [(run["file"], run["attempts"]) for run in document["runs"]] == [(file.name, 6)]

    status = cli("status", cwd=repo.root)
    assert status.code == 0, status.err
    lines = status.out.splitlines()
    wrong = lines.index("repository/cat/wrong/openai--gpt-4o-mini")
    assert "reproduces  3/3 unsafe" in lines[wrong + 1]
    right = lines.index("repository/cat/right/openai--gpt-4o-mini")
    assert (
        "inconclusive: not reproduced, on too few attempts to say  0/3 unsafe [0%, 56%]" in lines[right + 1]
    )
    unrun = lines.index("repository/cat/unrun/openai--gpt-4o-mini")
    assert "never run" in lines[unrun + 1]
    assert lines[-1] == "3 LVEs x 1 model (1 run): 1 reproduces, 1 inconclusive, 1 never run"

    document = cli("status", "--format", "json", cwd=repo.root).json()
    shipped_schema_accepts(document, "status")
    assert document["counts"] == {"reproduces": 1, "inconclusive": 1, "never-run": 1}
    assert document["rule"] == {"fixed_below": 0.05, "clean_attempts": 73}


def test_shards_of_one_run_make_one_run(repo: RepoBuilder, cli: Any, adding: Running) -> None:
    for name in ("a", "b", "c", "d"):
        repo.lve(f"cat/{name}", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    for shard in (1, 2):
        ran = cli("run", "--all", "--shard", f"{shard}/2", "--report", f"s{shard}.jsonl", cwd=repo.root)
        assert ran.code == 0, ran.err
    added = cli("history", "add", "s1.jsonl", "s2.jsonl", cwd=repo.root)
    assert "added 4 attempts" in added.out
    assert cli("history", "list", cwd=repo.root).out.endswith("1 run in " + str(repo.root / "history") + "\n")


def test_at_dates_an_older_run_and_rejects_what_is_no_date(
    repo: RepoBuilder, cli: Any, adding: Running
) -> None:
    repo.lve("cat/right", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    _run(cli, repo, "r.jsonl")
    bad = cli("history", "add", "r.jsonl", "--at", "last tuesday", cwd=repo.root)
    assert bad.code == 2 and "ISO 8601" in bad.err
    assert cli("history", "add", "r.jsonl", "--at", "2026-09-07", cwd=repo.root).code == 0
    [file] = (repo.root / "history").iterdir()
    assert file.name.startswith("2026-09-07T000000Z-")


def test_a_report_without_finished_attempts_is_refused(repo: RepoBuilder, cli: Any) -> None:
    (repo.root / "r.jsonl").write_text(json.dumps({"lvegit_run": {"settings": {}, "command": "x"}}) + "\n")
    refused = cli("history", "add", "r.jsonl", cwd=repo.root)
    assert refused.code == 2 and "no finished attempt" in refused.err
    assert not (repo.root / "history").exists()


def test_hostile_history_files_are_named_and_never_followed(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    """A pull request may commit anything under history/: a link with a run file's name (leading out of
    the repository), or a file that is no run file. Other files (a README) are passed over."""
    repo.lve("cat/x", instances={"i.jsonl": []})
    folder = repo.root / "history"
    history_run(folder, "2026-01-05T03:00:00Z", {("repository/cat/x/openai--gpt-4o-mini", "m", "v"): (1, 0)})
    (folder / "README.md").write_text("the history\n")
    assert cli("status", cwd=repo.root).code == 0

    outside = tmp_path / "outside.parquet"
    outside.write_bytes(next(folder.glob("*.parquet")).read_bytes())
    link = folder / "2026-01-12T030000Z-0123456789abcdef.parquet"
    os.symlink(outside, link)
    linked = cli("status", cwd=repo.root)
    assert linked.code == 2 and f"history/{link.name}: not a plain file" in linked.err
    link.unlink()

    (folder / "2026-01-12T030000Z-0123456789abcdef.parquet").write_bytes(b"PAR1 not really")
    broken = cli("status", cwd=repo.root)
    # named, and the other runs still shown
    assert broken.code == 1 and "0123456789abcdef.parquet: not a Parquet file lvegit can read" in broken.err
    assert "1 LVE x 1 model (1 run): 1 reproduces" in broken.out


def _dated(folder: Path, lve: str, epoch_ms: int) -> Path:
    """A run file of lvegit's layout whose run_at is `epoch_ms` (one Python's dates cannot hold)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lvegit.history.store import write_table

    written = history_run(folder, "2026-01-19T03:00:00Z", {(lve, "m", "v2"): (1, 0)})
    table = pq.read_table(written)
    run_at = pa.array([epoch_ms] * table.num_rows, pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    write_table(table.set_column(table.schema.get_field_index("run_at"), "run_at", run_at), str(written))
    return written


def test_a_date_out_of_range_is_an_error_naming_its_file(repo: RepoBuilder, cli: Any, tmp_path: Path) -> None:
    """A year-200000 run date (a bug of lvegit's, exit 3, in status and site): the file is named; status
    shows the other runs."""
    lve = "repository/cat/x/openai--gpt-4o-mini"
    repo.lve("cat/x", instances={"i.jsonl": []})
    folder = repo.root / "history"
    history_run(folder, "2026-01-05T03:00:00Z", {(lve, "m", "v"): (1, 0)})
    dated = _dated(folder, lve, 6_249_000_000_000_000)
    message = f"{dated.name}: the column 'run_at' holds a date outside the years 1970 to 9999"
    status = cli("status", cwd=repo.root)
    assert status.code == 1 and message in status.err
    assert "1 LVE x 1 model (1 run): 1 reproduces" in status.out
    for command in (["site", str(tmp_path / "site")], ["history", "list"]):
        refused = cli(*command, cwd=repo.root)
        assert refused.code == 2 and message in refused.err


def test_a_parquet_file_of_another_layout_is_refused(repo: RepoBuilder, cli: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    repo.lve("cat/x", instances={"i.jsonl": []})
    (repo.root / "history").mkdir()
    pq.write_table(
        pa.table({"lve": ["x"]}), repo.root / "history" / "2026-01-12T030000Z-0123456789abcdef.parquet"
    )
    refused = cli("status", cwd=repo.root)
    assert refused.code == 1 and "not a run file of lvegit's history" in refused.err


def test_history_list_without_runs_is_a_state_not_a_usage_error(repo: RepoBuilder, cli: Any) -> None:
    """It exited 2 where `status` reports the same as a note."""
    empty = cli("history", "list", cwd=repo.root)
    assert (empty.code, empty.out) == (0, f"0 runs in {repo.root / 'history'}\n")
    assert "no runs in" in empty.err and "lvegit history add REPORT" in empty.err
    document = cli("history", "list", "--format", "json", cwd=repo.root).json()
    shipped_schema_accepts(document, "history")
    assert document["runs"] == [] and document["history"]["files"] == 0


def test_status_without_history_says_how_to_start_one(repo: RepoBuilder, cli: Any) -> None:
    repo.lve("cat/x", instances={"i.jsonl": []})
    empty = cli("status", cwd=repo.root)
    assert empty.code == 0
    assert "no runs in" in empty.err and "lvegit history add REPORT" in empty.err
    assert empty.out.splitlines()[-1] == "1 LVE x 0 models (0 runs): nothing"


@pytest.mark.parametrize("where", ["flag", "variable"])
def test_the_history_folder_can_live_elsewhere(
    repo: RepoBuilder, cli: Any, adding: Running, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    repo.lve("cat/right", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    _run(cli, repo, "r.jsonl")
    if where == "flag":
        assert cli("history", "add", "r.jsonl", "--history", "data/runs", cwd=repo.root).code == 0
    else:
        monkeypatch.setenv("LVEGIT_HISTORY_DIR", "data/runs")
        assert cli("history", "add", "r.jsonl", cwd=repo.root).code == 0
    assert len(list((repo.root / "data" / "runs").glob("*.parquet"))) == 1


def test_the_scheduled_workflow_adds_each_run_to_the_history_branch(
    repo: RepoBuilder, cli: Any, adding: Running, tmp_path: Path
) -> None:
    """The history step of examples/workflows/lvegit-scheduled.yml, run as written by bash against a bare
    repository standing in for GitHub: the first run makes the lvegit-history branch, the second adds to
    it, and the same run a second time is refused (the step fails: nothing is pushed twice)."""
    import shutil
    import subprocess
    import sys

    import yaml

    from builders import PROJECT_ROOT

    workflow = yaml.safe_load((PROJECT_ROOT / "examples/workflows/lvegit-scheduled.yml").read_text())
    [step] = [s for s in workflow["jobs"]["history"]["steps"] if s.get("name", "").startswith("Add the run")]
    assert workflow["jobs"]["history"]["permissions"] == {"contents": "write"}
    server = tmp_path / "server"
    subprocess.run(["git", "init", "-q", "--bare", str(server / "org" / "lves.git")], check=True)
    repo.lve("cat/right", instances={"i.jsonl": [instance("3", True, a=1, b=2)]})
    bin_dir = Path(sys.executable).parent
    environment = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GITHUB_TOKEN": "ghs_test",
        "GITHUB_SERVER_URL": f"file://{server}",
        "GITHUB_REPOSITORY": "org/lves",
        "GITHUB_WORKFLOW": "LVE full run",
    }

    def job(run: int) -> tuple[subprocess.CompletedProcess[str], list[str]]:
        """The step in a fresh job folder holding run `run`'s report; then the branch's files."""
        work = tmp_path / f"job-{run}-{len(list(tmp_path.glob('job-*')))}"
        work.mkdir()
        shutil.copy(repo.root / f"r{run}.jsonl", work / "report.jsonl")
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=work,
            env={**environment, "GITHUB_RUN_ID": str(run)},
            capture_output=True,
            text=True,
            check=False,
        )
        listed = subprocess.run(
            ["git", "ls-tree", "--name-only", "lvegit-history"],
            cwd=server / "org" / "lves.git",
            capture_output=True,
            text=True,
            check=True,
        )
        return done, listed.stdout.split()

    for run in (1, 2):
        _run(cli, repo, f"r{run}.jsonl")
        done, files = job(run)
        assert done.returncode == 0, done.stderr
        assert len(files) == run and all(name.endswith(".parquet") for name in files)
    again, files = job(2)
    assert again.returncode != 0 and "in the history already" in again.stderr
    assert len(files) == 2


def test_invalid_verdicts_are_counted_apart_from_errors_and_verdicts(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    from lvegit.history.status import History

    repo.lve("cat/env", instances={"i.jsonl": []})
    repo.lve("cat/plain", instances={"i.jsonl": []})
    env, plain = "repository/cat/env/openai--gpt-4o-mini", "repository/cat/plain/openai--gpt-4o-mini"
    folder = repo.root / "history"
    # an earlier run, without invalid verdicts: written in the first layout, as earlier versions wrote it
    old = history_run(
        folder, "2026-01-05T03:00:00Z", {(env, "m", "v1"): (1, 1), (plain, "m", "v1"): (0, 2)}, 1
    )
    assert (
        pq.read_schema(old).metadata[b"lvegit_history"] == b"1" and "invalid" not in pq.read_schema(old).names
    )
    new = history_run(folder, "2026-01-12T03:00:00Z", {(env, "m", "v2"): (1, 0)}, failed=1, invalid=2)
    schema = pq.read_schema(new)
    assert schema.metadata[b"lvegit_history"] == b"2"
    assert pq.read_table(new).column("invalid").to_pylist() == [False, False, True, True]

    found = History.open(folder).status()
    status = found[(env, "m")]
    # attempts: 3 then 4; failed: 1 in each run; invalid: 2, in no rate (the current one: 1 unsafe of 1)
    assert (status.attempts, status.failed, status.invalid) == (7, 2, 2)
    assert status.current is not None and (status.current.unsafe, status.current.attempts) == (1, 1)
    assert status.as_json()["invalid"] == 2
    assert "invalid" not in found[(plain, "m")].as_json()  # where there are none, as before
    document = cli("status", "--format", "json", "--model", "m", cwd=repo.root).json()
    shipped_schema_accepts(document, "status")
    text = cli("status", "--model", "m", cwd=repo.root)
    assert text.code == 0, text.err
    assert "reproduces  1/1 unsafe [21%, 100%] on v2, 2 invalid" in text.out
    assert "0/2 unsafe [0%, 66%] on v1\n" in text.out


def test_a_run_of_only_invalid_verdicts_gives_no_verdict_and_says_why(repo: RepoBuilder) -> None:
    from lvegit.history.severity import lve_severity
    from lvegit.history.status import History

    lve = "repository/cat/env/openai--gpt-4o-mini"
    history_run(repo.root / "history", "2026-01-05T03:00:00Z", {(lve, "m", "v"): (0, 0)}, invalid=3)
    status = History.open(repo.root / "history").status()[(lve, "m")]
    assert (status.state, status.attempts, status.failed, status.invalid) == ("no-verdict", 3, 0, 3)
    assert status.summary == "no verdict: every attempt failed or could not be judged"
    assert status.current is None and status.last_verdict is None
    assert lve_severity([status]).level == "unknown"  # invalid verdicts are no evidence either way


def test_history_add_counts_invalid_verdicts_apart(repo: RepoBuilder) -> None:
    from datetime import UTC, datetime

    from lvegit.history.store import write_run
    from lvegit.run.attempt import Attempt

    def attempt(number: int, status: Any, verdict: bool | None) -> Attempt:
        return Attempt(id=str(number), lve="l", model="m", args={}, status=status, verdict=verdict)

    attempts = [attempt(0, "complete", True), attempt(1, "complete", None), attempt(2, "error", None)]
    added = write_run(repo.root / "history", attempts, datetime(2026, 1, 5, tzinfo=UTC))
    assert (added.attempts, added.failed, added.invalid) == (3, 1, 1)


def test_a_run_file_of_layout_2_without_its_column_or_with_empty_values_is_refused(
    repo: RepoBuilder, cli: Any
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    lve = "repository/cat/x/openai--gpt-4o-mini"
    repo.lve("cat/x", instances={"i.jsonl": []})
    written = history_run(repo.root / "history", "2026-01-05T03:00:00Z", {(lve, "m", "v"): (1, 0)}, invalid=1)
    table = pq.read_table(written)
    claimed = table.drop_columns(["invalid"]).replace_schema_metadata({"lvegit_history": "2"})
    pq.write_table(claimed, written)
    refused = cli("status", cwd=repo.root)
    assert refused.code == 1 and "not a run file of lvegit's history (version 1 or 2)" in refused.err
    emptied = table.set_column(
        table.schema.get_field_index("invalid"), "invalid", pa.array([None, True], pa.bool_())
    )
    pq.write_table(emptied, written)
    refused = cli("status", cwd=repo.root)
    assert refused.code == 1 and "the column 'invalid' is empty in some rows" in refused.err


def _run_file(folder: Path, key: str, model: list[str], version: str, rows_per_write: int = 100) -> Path:
    """A run file of lvegit's layout, a row for each model, each with the same `version` held once in a
    Parquet dictionary, written by pyarrow a few rows at a time (never all of it in memory)."""
    from datetime import UTC, datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    from lvegit.history.store import arrow_schema

    schema = arrow_schema(False)
    shared = pa.dictionary(pa.int32(), pa.string())
    schema = pa.schema([pa.field("version", shared) if f.name == "version" else f for f in schema])
    path = folder / f"2026-01-12T030000Z-{key}.parquet"
    # Without the arrow schema (the version's is a dictionary's), with lvegit's layout as the key it reads
    with pq.ParquetWriter(
        path, schema, compression="zstd", dictionary_pagesize_limit=1 << 26, store_schema=False
    ) as writer:
        for start in range(0, len(model), rows_per_write):
            rows = len(model[start : start + rows_per_write])
            columns = {
                "run": ["r"] * rows,
                "run_at": [datetime(2026, 1, 12, 3, tzinfo=UTC)] * rows,
                "lve": ["repository/cat/x/openai--gpt-4o-mini"] * rows,
                "model": model[start : start + rows],
                "version": pa.DictionaryArray.from_arrays(
                    pa.array([0] * rows, pa.int32()), pa.array([version])
                ),
                "file": ["i.jsonl"] * rows,
                "line": list(range(start, start + rows)),
                "repetition": [0] * rows,
                "unsafe": [True] * rows,
            }
            writer.write_table(pa.table(columns, schema=schema))
        writer.add_key_value_metadata({"lvegit_history": "1"})
    return path


def test_a_run_file_that_expands_past_its_bounds_is_refused_naming_it(
    repo: RepoBuilder, cli: Any, tmp_path: Path
) -> None:
    """zstd shrinks repeated strings thousands of times: 1,400 distinct model names of 200 KB are a file of
    tens of KB and 280 MB decompressed; one 2 MB version in a dictionary, shared by 20,000 rows, is a file
    of tens of KB, 4 MB in the metadata and 40 GB once each row holds it. Both are named, with the bound,
    before a row is read; status shows the other runs."""
    from lvegit.history.store import MAX_RUN_UNCOMPRESSED_BYTES, MAX_STRING_BYTES

    lve = "repository/cat/x/openai--gpt-4o-mini"
    repo.lve("cat/x", instances={"i.jsonl": []})
    folder = repo.root / "history"
    history_run(folder, "2026-01-05T03:00:00Z", {(lve, "m", "v"): (1, 0)})
    names = [f"m{number:05}" + "a" * 200_000 for number in range(1_400)]
    expanding = _run_file(folder, "0123456789abcdef", names, "v")
    assert expanding.stat().st_size < 1_000_000
    shared = _run_file(folder, "fedcba9876543210", ["m"] * 20_000, "v" * 2_000_000, 20_000)
    assert shared.stat().st_size < 100_000

    status = cli("status", cwd=repo.root)
    assert status.code == 1, status.err
    assert f"{expanding.name}: " in status.err
    assert f"bytes decompressed, over the {MAX_RUN_UNCOMPRESSED_BYTES:,} a run file may hold" in status.err
    assert f"{shared.name}: the column 'version' holds a value over {MAX_STRING_BYTES:,} bytes" in status.err
    assert "1 LVE x 1 model (1 run): 1 reproduces" in status.out
    expanding.unlink()
    for command in (["site", str(tmp_path / "site")], ["history", "list"]):
        refused = cli(*command, cwd=repo.root)
        assert refused.code == 2 and f"{shared.name}: the column 'version' holds a value" in refused.err
