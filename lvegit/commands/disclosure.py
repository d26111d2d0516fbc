from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import click

from lvegit.base.errors import EXIT_OK, UsageError
from lvegit.base.output import line
from lvegit.commands.catalog import short_help
from lvegit.commands.options import SuggestingGroup, open_repository, repo_option
from lvegit.lve.repo import Repository, is_withheld

identity_option = click.option(
    "--identity",
    "identity_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="An age identity file (AGE-SECRET-KEY-1...); default: the LVEGIT_DISCLOSURE_IDENTITY variable.",
)
recipient_option = click.option(
    "--recipient", "recipients", multiple=True, required=True, help="An age public key (age1...)."
)


def _date(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            datetime.date.fromisoformat(value)
        except ValueError:
            raise click.BadParameter(f"{value!r} is no date YYYY-MM-DD") from None
    return value


def _withheld_dir(repo: Repository, path: Path) -> Path:
    lve_dir = repo.lve_dir_of(path if path.exists() else repo.root / path, withheld=True)
    if lve_dir is None or not is_withheld(lve_dir):
        raise UsageError(f"{path}: not a withheld LVE (no withheld.json)")
    return lve_dir


@click.group("disclosure", cls=SuggestingGroup, short_help=short_help("disclosure"))
def disclosure_command() -> None:
    """Withheld LVEs (coordinated disclosure): an LVE's payload committed encrypted to the repository's
    disclosure recipients (disclosure.toml), a public abstract (withheld.json) beside it, until it is
    disclosed. Validation needs no key; reading the payload needs a disclosure identity
    (--identity FILE or LVEGIT_DISCLOSURE_IDENTITY). See docs/disclosure.md.

    \b
    Examples:
      lvegit disclosure withhold . --description "Leaks its system prompt" --embargo-until 2027-03-01
      lvegit disclosure grant repository/privacy/leak/openai--gpt-4o --recipient age1... --name Vendor
      lvegit disclosure disclose repository/privacy/leak/openai--gpt-4o
    """


@disclosure_command.command("withhold")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--description", required=True, help="What the LVE is, for the public: no payload in it.")
@click.option("--embargo-until", required=True, callback=_date, help="The disclosure date, YYYY-MM-DD.")
@click.option("--vendor-contacted-on", callback=_date, help="When the vendor was told, YYYY-MM-DD.")
@click.option("--reporter", help="The credit the reporter asks for.")
@repo_option
def withhold_command(
    path: Path,
    description: str,
    embargo_until: str,
    vendor_contacted_on: str | None,
    reporter: str | None,
    repo_path: Path | None,
) -> int:
    """Encrypt a clear LVE (a draft on your machine) to the repository's disclosure recipients and write
    its public abstract; its clear files (and README) are removed. Commit the two files it leaves and open
    an ordinary pull request: the check validates them without any key.

    \b
    Examples:
      lvegit disclosure withhold . --description "Leaks its system prompt" --embargo-until 2027-03-01
      lvegit disclosure withhold . --description "..." --embargo-until 2027-03-01 --reporter "A. Researcher"
    """
    from lvegit.disclosure.withheld import withheld_note, withhold

    repo = open_repository(repo_path)
    lve_dir = repo.lve_dir_of(path if path.exists() else repo.root / path)
    if lve_dir is None:
        raise UsageError(f"{path}: not inside an LVE (no test.json)")
    fields = {
        "description": description,
        "embargo_until": embargo_until,
        "vendor_contacted_on": vendor_contacted_on,
        "reporter": reporter,
    }
    abstract = withhold(repo, lve_dir, fields)
    line(
        f"{repo.relative(lve_dir)}: withheld for {len(abstract.readers)} reader(s); {withheld_note(abstract)}"
    )
    return EXIT_OK


def _readers(path: Path, identity_file: Path | None, repo_path: Path | None, **change: Any) -> int:
    from lvegit.disclosure.identity import load_identity
    from lvegit.disclosure.withheld import set_readers

    repo = open_repository(repo_path)
    lve_dir = _withheld_dir(repo, path)
    abstract = set_readers(repo, lve_dir, load_identity(identity_file, required=True), **change)
    line(f"{repo.relative(lve_dir)}: readable by {len(abstract.readers)} reader(s)")
    return EXIT_OK


@disclosure_command.command("grant")
@click.argument("path", type=click.Path(path_type=Path))
@recipient_option
@click.option("--name", help="Who holds the key (a vendor's name), recorded in the abstract.")
@identity_option
@repo_option
def grant_command(
    path: Path,
    recipients: tuple[str, ...],
    name: str | None,
    identity_file: Path | None,
    repo_path: Path | None,
) -> int:
    """Give a reader (a model's vendor) the payload: encrypt the same payload again to the readers and
    them. The commitment stays; the abstract lists the new reader.

    \b
    Examples:
      lvegit disclosure grant repository/privacy/leak/openai--gpt-4o --recipient age1... --name Vendor
    """
    return _readers(path, identity_file, repo_path, add=[(r, name) for r in recipients], drop=[])


@disclosure_command.command("revoke")
@click.argument("path", type=click.Path(path_type=Path))
@recipient_option
@identity_option
@repo_option
def revoke_command(
    path: Path, recipients: tuple[str, ...], identity_file: Path | None, repo_path: Path | None
) -> int:
    """Encrypt the payload again without a reader. What they read already, and the envelopes in git
    history, stay readable to them: revoking only keeps later versions from them.

    \b
    Examples:
      lvegit disclosure revoke repository/privacy/leak/openai--gpt-4o --recipient age1...
    """
    return _readers(path, identity_file, repo_path, add=[], drop=list(recipients))


@disclosure_command.command("disclose")
@click.argument("path", type=click.Path(path_type=Path))
@identity_option
@repo_option
def disclose_command(path: Path, identity_file: Path | None, repo_path: Path | None) -> int:
    """Publish a withheld LVE: decrypt its payload, verify it against the commitment in its abstract, write
    its files in clear and remove the envelope and the abstract. The LVE becomes an ordinary one; run
    `lvegit readme` for its README.

    \b
    Examples:
      lvegit disclosure disclose repository/privacy/leak/openai--gpt-4o --identity key.txt
    """
    from lvegit.disclosure.identity import load_identity
    from lvegit.disclosure.withheld import disclose

    repo = open_repository(repo_path)
    lve_dir = _withheld_dir(repo, path)
    abstract = disclose(repo, lve_dir, load_identity(identity_file, required=True))
    sha = abstract.get("commitment").sha256
    line(f"{repo.relative(lve_dir)}: disclosed; the payload matches the commitment {sha}")
    return EXIT_OK
