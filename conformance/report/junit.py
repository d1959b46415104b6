"""The JUnit XML of a conformance run, as pytest writes it (one test case per vector, with its
real time), bounded: texts cut to CASE_TEXT characters and left out once the file's budget is
used."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from conformance.run.outcomes import UNSUPPORTED, WRONG_ANSWERS, Outcome
from conformance.run.suite import SuiteResult, slug

NOW_PASSING = "now passing: remove it from the known-failure list"
JUNIT_BYTES = 16 << 20           # bytes of junit.xml
CASE_TEXT = 4000                 # characters of one JUnit failure text


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _x(text: Any) -> str:
    """``text`` without the characters XML 1.0 cannot hold (an id or a message may have them)."""
    return _NOT_XML.sub("\ufffd", str(text))


def junit_xml(result: SuiteResult, bundles: Mapping[tuple[str, str], Path] | None = None,
              properties: Mapping[str, Any] | None = None, limit: int = JUNIT_BYTES) -> str:
    """JUnit XML as pytest writes it: real times per vector, properties of the run, a wrong
    answer is a failure, a process-level fault (crash, hang, garbage, ...) an error, an
    expected failure is skipped, a strict unexpected pass is a failure. Texts are cut to
    CASE_TEXT characters, and left out (with a marker) once ``limit`` bytes are used."""
    bundles = bundles or {}
    root = ET.Element("testsuites", name="rtwo-vm conformance")
    totals: Counter[str] = Counter()
    budget = [limit - min(200_000, limit // 4)]     # the rest: properties, issues, attributes
    for run in result.runs:
        suite = ET.SubElement(root, "testsuite", name=_x(run.name), time=f"{run.total_seconds:.3f}")
        props = ET.SubElement(suite, "properties")
        for key, value in {**dict(properties or {}), "implementation.name": run.name,
                           "implementation.version": run.version, "implementation.command": run.command,
                           "seed": run.seed}.items():
            ET.SubElement(props, "property", name=_x(key), value=_x(str(value)[:500]))
        counts: Counter[str] = Counter()
        scenarios = sorted(run.scenarios.outcomes.values(), key=lambda o: o.vector_id)
        for o in sorted(run.outcomes.values(), key=lambda o: o.vector_id) + scenarios:
            group = o.vector_id.split("/", 1)[0]
            case = ET.SubElement(suite, "testcase", classname=_x(f"{slug(run.name)}.{slug(group)}"),
                                 name=_x(o.vector_id), time=f"{o.seconds:.6f}")
            counts["tests"] += 1
            budget[0] -= 200 + len(o.vector_id)
            if o.status == "xfail":
                counts["skipped"] += 1
                skipped = ET.SubElement(case, "skipped", type="xfail", message=_x(f"known failure: {o.known}"[:300]))
                skipped.text = _x(_budgeted(_details(o, bundles.get((run.command, o.vector_id))), budget))
            elif o.status == "xpass":
                counts["failures"] += 1
                ET.SubElement(case, "failure", type="xpass", message=_x(f"{NOW_PASSING} (listed: {o.known})"[:300]))
            elif o.status == "fail":
                error = o.kind not in WRONG_ANSWERS and o.kind != UNSUPPORTED
                counts["errors" if error else "failures"] += 1
                first = str(o.failures[0]) if o.failures else o.reason
                element = ET.SubElement(case, "error" if error else "failure", message=_x(first[:300]),
                                        type=",".join(o.categories))
                element.text = _x(_budgeted(_details(o, bundles.get((run.command, o.vector_id))), budget))
        for reason, n in Counter(run.scenarios.not_run.values()).items():
            # Never silent: the scenarios an adapter was not sent are one skipped case per reason.
            counts["tests"] += 1
            counts["skipped"] += 1
            case = ET.SubElement(suite, "testcase", classname=f"{slug(run.name)}.scenario",
                                 name=_x(f"{n} scenario vectors not run"), time="0")
            ET.SubElement(case, "skipped", type="not_run", message=_x(reason[:300]))
        for issue in run.issues[:100] + run.scenarios.issues[:100]:
            counts["errors"] += 1
            counts["tests"] += 1
            ET.SubElement(ET.SubElement(suite, "testcase", classname=f"{slug(run.name)}.adapter",
                                        name="adapter protocol", time="0"), "error", message=_x(issue[:300]))
        for key in ("tests", "failures", "errors", "skipped"):
            suite.set(key, str(counts[key]))
        totals.update(counts)
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(totals[key]))
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _budgeted(text: str, budget: list[int]) -> str:
    text = text if len(text) <= CASE_TEXT else text[:CASE_TEXT] + f"\n... [cut: {len(text)} characters]"
    if budget[0] - len(text) < 0:
        return "[left out: junit.xml size limit]"
    budget[0] -= len(text)
    return text


def _details(o: Outcome, bundle: Path | None = None) -> str:
    lines = [f"{m.category}: {m}" for m in o.failures]
    if o.reason:
        lines.append(o.reason[:2000])
    if o.divergence:
        lines.append(str(o.divergence)[:2000])
    if o.scenario is not None:
        lines.append(str(o.scenario)[:2000])
        if o.scenario.index is not None:
            lines.append(f"state before step {o.scenario.index}: {str(o.scenario.state_before)[:2000]}")
    if bundle is not None:
        lines.append(f"replay bundle: {bundle}")
    return "\n".join(lines)
