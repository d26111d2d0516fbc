"""JUnit XML, written with junitparser: a test suite per LVE, a test case per attempt. A verdict that differs
from the recorded one is a failure; an attempt that failed is an error; one replay could not judge is
skipped, with its reason, and so is an invalid verdict (the output could not be judged)."""

from __future__ import annotations

from lvegit.base.escape import mask
from lvegit.judge.results import verdict_word
from lvegit.publish.export import by_lve, instance_name
from lvegit.run.attempt import Attempt


def junit_xml(attempts: list[Attempt]) -> str:
    from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

    xml = JUnitXml("lvegit")
    for lve, group in by_lve(attempts).items():
        suite = TestSuite(lve)
        for attempt in group:
            case = TestCase(instance_name(attempt), classname=lve)
            if attempt.started_at is not None and attempt.finished_at is not None:
                case.time = round(attempt.finished_at - attempt.started_at, 3)
            if attempt.status == "skipped":
                case.result = [Skipped(mask(attempt.error or "not judged"))]
            elif attempt.status == "complete" and attempt.verdict is None:
                case.result = [Skipped("invalid: the output could not be judged")]
            elif attempt.status != "complete":
                case.result = [Error(mask(attempt.error or f"status {attempt.status}"))]
            elif attempt.recorded is not None and attempt.verdict != attempt.recorded:
                message = f"recorded {verdict_word(attempt.recorded)}, now {verdict_word(attempt.verdict)}"
                case.result = [Failure(message)]
            suite.add_testcase(case)
        suite.update_statistics()  # type: ignore[no-untyped-call]
        xml.add_testsuite(suite)
    xml.update_statistics()  # type: ignore[no-untyped-call]
    text: bytes = xml.tostring()  # type: ignore[no-untyped-call]
    return '<?xml version="1.0" encoding="utf-8"?>\n' + text.decode("utf-8") + "\n"
