"""Authoring errors name file, line and key path; lint catches unsolvable, trivial and
unreachable scenarios; the CLI exits non-zero on problems."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.authoring.lint import lint_paths
from chaoseval.authoring.scaffold import SCENARIO_TEMPLATE
from chaoseval.cli.app import app
from chaoseval.errors import ScenarioLoadErrors
from chaoseval.loading.files import load_paths

GOOD = SCENARIO_TEMPLATE.format(name="shop-cancel", domain="shop", filename="shop.yaml")


def line_of(text: str, needle: str) -> int:
    """1-based line where ``needle`` (less leading newlines) starts: where the error must point."""
    start = text.index(needle) + len(needle) - len(needle.lstrip("\n"))
    return text[:start].count("\n") + 1


def load_errors(tmp_path: Path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ScenarioLoadErrors) as exc:
        load_paths([path])
    return [str(e) for e in exc.value.errors]


# (what is broken, original text, replacement, key path, words the message must hold)
MUTATIONS = [
    (
        "misspelled tool in the solution",
        "call: cancel_order",
        "call: cancel_ordr",
        "solution.steps[1].call",
        ["no tool named 'cancel_ordr'", "did you mean 'cancel_order'"],
    ),
    (
        "misspelled verifier kind",
        "not_called: delete_order",
        "not_caled: delete_order",
        "checks[2].not_caled",
        ["unknown key 'not_caled'", "did you mean 'not_called'"],
    ),
    (
        "misspelled perturbation",
        '"latency:mean=2"',
        '"latancy:mean=2"',
        "perturbations[1]",
        ["unknown perturbation 'latancy'", "did you mean 'latency'"],
    ),
    (
        "wrong type of value",
        "budgets: {max_steps: 6}",
        "budgets: {max_steps: many}",
        "budgets.max_steps",
        ["valid integer", "found 'many'"],
    ),
    (
        "misspelled top-level key",
        "\ntools:",
        "\ntoolz:",
        "toolz",
        ["unknown key 'toolz'", "did you mean 'tools'"],
    ),
    (
        "unknown faker provider",
        "customer: email",
        "customer: emial",
        "generate.orders.fields.customer",
        ["expected a faker provider", "found 'emial'", "did you mean 'email'"],
    ),
    (
        "misspelled tool kind",
        "kind: lookup",
        "kind: lookp",
        "tools.lookup_order.kind",
        ["expected a tool kind", "found str 'lookp'", "did you mean 'lookup'"],
    ),
    (
        "unknown table",
        "    table: orders\n    key: order_id\n    not_found",
        "    table: order\n    key: order_id\n    not_found",
        "tools.lookup_order.table",
        ["no table named 'order'", "did you mean 'orders'"],
    ),
    (
        "bad path expression root",
        '"tables.orders[order_id={order_id}].status',
        '"tabels.orders[order_id={order_id}].status',
        "checks[0].expect",
        ["unknown root 'tabels'", "did you mean 'tables'"],
    ),
    (
        "argument the tool does not take",
        "reason: customer request",
        "reasn: customer request",
        "solution.steps[1].args.reasn",
        ["takes no argument 'reasn'", "did you mean 'reason'"],
    ),
    (
        "step reference to no step",
        "order_id: $order.order_id, reason",
        "order_id: $ordr.order_id, reason",
        "solution.steps[1].args.order_id",
        ["$ordr names no earlier step", "did you mean 'order'"],
    ),
]


@pytest.mark.parametrize(
    ("what", "old", "new", "key", "words"), MUTATIONS, ids=[m[0] for m in MUTATIONS]
)
def test_each_authoring_error_names_file_line_key_and_a_fix(tmp_path, what, old, new, key, words):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    (message,) = load_errors(tmp_path, "broken.yaml", text)
    expected_line = line_of(text, new)
    assert message.startswith(f"{tmp_path / 'broken.yaml'}:{expected_line}: {key}: "), message
    for word in words:
        assert word in message


def test_yaml_syntax_error_has_a_line(tmp_path):
    (message,) = load_errors(tmp_path, "syntax.yaml", "id: x\ndescription: [unclosed\n")
    assert re.match(rf"{re.escape(str(tmp_path / 'syntax.yaml'))}:\d+: not valid YAML", message)


def test_one_file_reports_several_independent_errors(tmp_path):
    text = GOOD.replace("call: cancel_order", "call: cancel_ordr").replace(
        "not_called: delete_order", "not_called: delete_ordr"
    )
    messages = load_errors(tmp_path, "two.yaml", text)
    assert len(messages) == 2
    assert any("cancel_ordr" in m for m in messages) and any("delete_ordr" in m for m in messages)


def test_a_broken_tool_does_not_cascade_into_its_references(tmp_path):
    messages = load_errors(
        tmp_path, "cascade.yaml", GOOD.replace("args: {reason: str}", "args: {reason: string}")
    )
    assert len(messages) == 1 and "did you mean 'str'" in messages[0]


def test_one_bad_file_does_not_hide_the_others(tmp_path):
    (tmp_path / "a_bad.yaml").write_text(GOOD.replace("kind: lookup", "kind: lookp"))
    (tmp_path / "b_good.yaml").write_text(GOOD)
    (tmp_path / "c_bad.yaml").write_text(GOOD.replace("customer: email", "customer: emial"))
    with pytest.raises(ScenarioLoadErrors) as exc:
        load_paths([tmp_path])
    sources = sorted(Path(str(e.source).split(":")[0]).name for e in exc.value.errors)
    assert sources == ["a_bad.yaml", "c_bad.yaml"]


# --- lint -------------------------------------------------------------------------------------


def lint_text(tmp_path: Path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    (report,) = lint_paths([path], seeds=[0, 1], trials=1)
    return {f.check: f for f in report.findings}, report


def test_lint_passes_a_good_scenario(tmp_path):
    findings, report = lint_text(tmp_path, GOOD)
    assert report.ok
    assert set(findings) == {"schema", "solvable", "non-trivial", "reachable"}


def test_lint_catches_an_unsolvable_scenario(tmp_path):
    # The verifier wants a state the reference never produces.
    text = GOOD.replace('status == cancelled"', 'status == refunded"')
    findings, report = lint_text(tmp_path, text)
    assert not report.ok and not findings["solvable"].ok
    assert "failed 2/2 clean trials" in findings["solvable"].summary
    assert any("order cancelled" in d for d in findings["solvable"].details)


def test_lint_catches_a_trivially_passing_scenario(tmp_path):
    # Checks that hold in the untouched world and for an empty answer.
    checks = (
        "checks:\n"
        "  - name: nothing deleted\n"
        "    not_called: delete_order\n"
        '  - expect: "count(tables.orders) == 8"\n\n'
    )
    start, end = GOOD.index("checks:\n"), GOOD.index("solution:\n")
    findings, report = lint_text(tmp_path, GOOD[:start] + checks + GOOD[end:])
    assert not report.ok
    assert findings["solvable"].ok
    assert not findings["non-trivial"].ok
    assert any("do-nothing passed" in d for d in findings["non-trivial"].details)


def test_lint_catches_an_unreachable_perturbation(tmp_path):
    text = GOOD.replace(
        '"latency:mean=2"', '"timeout:modes=[raise],tools=delete_order"'
    )  # the solution never calls delete_order
    findings, report = lint_text(tmp_path, text)
    reach = findings["reachable"]
    assert not report.ok and not reach.ok
    assert any("unreachable" in d and "delete_order" in d for d in reach.details)
    assert any("lookup_order" in d and "delivered" in d for d in reach.details)


def test_lint_reports_schema_errors_and_keeps_going(tmp_path):
    (tmp_path / "bad.yaml").write_text(GOOD.replace("kind: lookup", "kind: lookp"))
    (tmp_path / "good.yaml").write_text(GOOD.replace("id: shop-cancel", "id: shop-ok"))
    reports = lint_paths([tmp_path], seeds=[0], trials=1)
    by_source = {Path(r.source).name: r for r in reports}
    assert not by_source["bad.yaml"].ok
    assert "lookp" in by_source["bad.yaml"].findings[0].details[0]
    assert by_source["good.yaml"].ok


def test_cli_lint_exit_codes_and_both_spellings(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace('"latency:mean=2"', '"timeout:tools=delete_order"'))
    runner = CliRunner()
    ok = runner.invoke(app, ["scenario", "lint", str(good), "--seeds", "1", "--trials", "1"])
    assert ok.exit_code == 0, ok.output
    assert "PASS solvable" in ok.output and "no problems" in ok.output
    fail = runner.invoke(app, ["scenarios", "lint", str(bad), "--seeds", "1", "--trials", "1"])
    assert fail.exit_code == 1
    assert "FAIL reachable" in fail.output


def test_the_authoring_guide_example_passes_lint(tmp_path):
    guide = (Path(__file__).resolve().parents[2] / "docs" / "AUTHORING.md").read_text()
    example = next(b for b in guide.split("```yaml\n")[1:] if b.startswith("id: "))
    findings, report = lint_text(tmp_path, example.split("```")[0])
    assert report.ok, [(f.check, f.summary, f.details) for f in findings.values()]


def test_lint_canaries_extra_cells_for_python_scenarios():
    vending = Path(__file__).resolve().parents[2] / "scenarios" / "vending.py"
    reports = lint_paths(
        [vending], seeds=[0], trials=1, perturbations=["timeout:tools=adjust_inventory"]
    )
    reach = [next(f for f in r.findings if f.check == "reachable") for r in reports]
    assert reach and all(not f.ok and "adjust_inventory" in f.details[0] for f in reach)
