"""Every command: where it lives and its one-line help. The CLI imports a command's module only when that
command runs, so `lvegit --help` and each command load just what they need."""

from __future__ import annotations

# name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "new": (
        "lvegit.commands.new",
        "new_command",
        "Scaffold a new LVE (test.json, prompt, instances/, README).",
    ),
    "validate": (
        "lvegit.commands.validate",
        "validate_command",
        "Check LVEs: test.json, prompts, parameters, checker and instances.",
    ),
    "replay": (
        "lvegit.commands.replay",
        "replay_command",
        "Re-check recorded instances with their checker, offline (no model).",
    ),
    "check": (
        "lvegit.commands.check",
        "check_command",
        "Validate LVEs and replay their instances in one pass (what CI runs).",
    ),
    "run": ("lvegit.commands.run", "run_command", "Re-execute recorded instances against the model."),
    "record": ("lvegit.commands.record", "record_command", "Run one new instance and append it."),
    "report": (
        "lvegit.commands.report",
        "report_command",
        "Summarise run reports, e.g. a sharded run's, as one.",
    ),
    "list": (
        "lvegit.commands.list_lves",
        "list_command",
        "List LVEs with model, checker and instance counts.",
    ),
    "show": (
        "lvegit.commands.show",
        "show_command",
        "Show one LVE: prompt, checker, parameters and its first instances.",
    ),
    "readme": (
        "lvegit.commands.readme",
        "readme_command",
        "Write or refresh the generated part of LVE READMEs (--check: only report).",
    ),
    "site": (
        "lvegit.commands.site",
        "site_command",
        "Write a static website of the repository (overview, categories, LVEs, filters).",
    ),
    "schema": (
        "lvegit.commands.schema",
        "schema_command",
        "Print the JSON Schema of test.json or of an instance line (for editors).",
    ),
    "export": (
        "lvegit.commands.export",
        "export_command",
        "Write run reports as JUnit XML, AVID or garak reports, or the repository as a dataset.",
    ),
    "status": (
        "lvegit.commands.status",
        "status_command",
        "Show each LVE's status on each model from the run history: fixed in, regressed, ...",
    ),
    "history": (
        "lvegit.commands.history",
        "history_command",
        "Add a run's report to the run history, or list its runs.",
    ),
    "disclosure": (
        "lvegit.commands.disclosure",
        "disclosure_command",
        "Withheld LVEs: withhold a payload, grant or revoke a reader, disclose it.",
    ),
    "ids": (
        "lvegit.commands.ids",
        "ids_command",
        "Give LVEs stable ids after a merge (assign), or list them.",
    ),
    "import": (
        "lvegit.commands.import_findings",
        "import_command",
        "Turn garak or promptfoo findings into LVE drafts.",
    ),
    "changed": (
        "lvegit.commands.changed",
        "changed_command",
        "List the LVEs you changed, or that a git diff (base...head) touches.",
    ),
    "models": (
        "lvegit.commands.models",
        "models_command",
        "List (and --download) the hub models the LVEs' checkers judge with.",
    ),
    "sandbox": (
        "lvegit.commands.sandbox_info",
        "sandbox_command",
        "Show how custom checker code is confined on this machine.",
    ),
    "action": ("lvegit.commands.action", "action_command", "Entry point of the GitHub Action."),
}


def short_help(name: str) -> str:
    return COMMANDS[name][2]
