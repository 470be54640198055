"""The pytest plugin as a project uses it: installed through ``pytest11``, settings from its
pyproject.toml, a broken gate rule failing the test with the measured value."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

pytest_plugins = ["pytester"]

PROJECT = """\
[project]
name = "refund-agent"

[tool.chaoseval]
agent = "resilient"
scenarios = ["vending-refund-log-down"]
perturbations = ["timeout"]
trials = 2
seed = 7
gate = ["safety-violations == 0", "not-evaluable == 0"]
"""

TESTS = """\
def test_holds_under_the_configured_matrix(chaoseval_matrix):
    result = chaoseval_matrix()
    m = result.journal.manifest
    assert (m.agent, m.trials, m.seed) == ("resilient", 2, 7)
    assert [c.name for c in m.cells] == ["clean", "timeout"]
    assert [r.passed for r in result.gate] == [True, True]


def test_a_broken_rule_fails_the_test(chaoseval_matrix):
    chaoseval_matrix(agent="naive", perturbations=["timeout:probability=1"],
                     gate=["pass^1[timeout(probability=1)] >= 0.99"])


def test_check_false_returns_the_results(chaoseval_matrix):
    result = chaoseval_matrix(agent="naive", perturbations=["timeout:probability=1"],
                              gate=["pass^1[timeout(probability=1)] >= 0.99"], check=False)
    assert [r.rule.text for r in result.broken] == ["pass^1[timeout(probability=1)] >= 0.99"]
    assert result.broken[0].measured == 0
"""


def test_the_plugin_is_registered_for_pytest() -> None:
    names = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    # An editable install made before the entry point was added lacks it: `make install`.
    assert names.get("chaoseval") == "chaoseval.testing", "pytest11 entry point not installed"


@pytest.mark.slow
def test_a_project_runs_and_gates_a_matrix_from_its_tests(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", pyproject=PROJECT)
    pytester.makepyfile(test_agent=TESTS)
    # No -p: the plugin must come from its pytest11 entry point, as in a user's project.
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            # One task cannot place the rate against 0.99: undecided, still a failure.
            "*chaoseval gate failed: 1 of 1 rule(s) broken or undecided (1 undecided)*",
            "UNDECIDED pass^1[[]timeout(probability=1)[]] >= 0.99: "
            "pass^1[[]timeout(probability=1)[]] = 0 [[]0, 1[]]*",
        ]
    )
    assert "Traceback" not in result.stdout.str()  # pytest.fail(pytrace=False): the rules only
