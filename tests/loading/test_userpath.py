"""Importing the user's modules: appended after installed packages, siblings of a scenario
file only while it loads, and a clear error where a local file is not what Python imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chaoseval.errors import ConfigError
from chaoseval.loading.files import load_paths
from chaoseval.loading.userpath import append_path, check_not_shadowed, importable

SCENARIO = '''\
from chaoseval import Check, Scenario, tool
from chaoseval_test_sibling import SKU  # a module beside this file


@tool()
def get_item(world, sku: str) -> dict:
    """Look up an item."""
    return dict(world.get("items", "sku", sku, what="item"))


async def solve(actor):
    item = await actor.call("get_item", sku=SKU)
    return actor.answer(f"found {item['sku']}")


shop = Scenario(
    id="shop-sibling",
    description="A scenario whose data lives in a module beside it.",
    domain="test",
    instruction="Find " + SKU + ".",
    tables={"items": [{"sku": SKU}]},
    tools=[get_item],
    checks=[Check(name="answered", kind="output", fn=lambda w, o, t: SKU in o.answer)],
    solution=solve,
    reference_steps=1,
)
'''


def write_scenario(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "chaoseval_test_sibling.py").write_text("SKU = 'SKU-7'\n")
    path = directory / "shop.py"
    path.write_text(SCENARIO)
    return path


def test_scenario_file_imports_a_module_beside_it_and_leaves_the_path_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "chaoseval_test_sibling", raising=False)
    before = list(sys.path)
    path = write_scenario(tmp_path / "shop")
    (scenario,) = load_paths([path])
    assert scenario.id == "shop-sibling" and scenario.tables["items"] == [{"sku": "SKU-7"}]
    assert sys.path == before
    sys.modules.pop("chaoseval_test_sibling")


def test_importable_keeps_an_entry_that_was_already_there(tmp_path: Path) -> None:
    entry = str(tmp_path.resolve())
    sys.path.append(entry)
    try:
        with importable(tmp_path):
            assert sys.path.count(entry) == 1
        assert entry in sys.path
    finally:
        sys.path.remove(entry)


def test_appended_directory_comes_after_installed_packages(tmp_path: Path) -> None:
    # tenacity is a dependency chaoseval does not import before it loads the user's agent;
    # -P: `python -c` would put the working directory first itself.
    (tmp_path / "tenacity.py").write_text("raise RuntimeError('user tenacity.py imported')\n")
    (tmp_path / "mine.py").write_text("VALUE = 42\n")
    code = (
        "from pathlib import Path\n"
        "from chaoseval.loading.userpath import append_path\n"
        "append_path(Path('.'))\n"
        "import mine, tenacity\n"
        "print(mine.VALUE, Path(tenacity.__file__).parent.name)\n"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["42", "tenacity"]


def test_missing_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        append_path(tmp_path / "nope")


@pytest.mark.parametrize("local", ["rich.py", "rich/__init__.py", "sys.py"])
def test_a_local_module_named_like_an_installed_one_is_reported(tmp_path: Path, local: str) -> None:
    file = tmp_path / local
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("")
    top = local.split("/")[0].removesuffix(".py")
    with pytest.raises(ConfigError, match=f"is not the module '{top}'.*rename {top}"):
        check_not_shadowed(f"{top}.anything", tmp_path)


def test_a_local_module_that_python_imports_is_fine(tmp_path: Path) -> None:
    (tmp_path / "chaoseval_test_unique.py").write_text("")
    check_not_shadowed("chaoseval_test_unique", tmp_path)  # not on the path: nothing to say
    with importable(tmp_path):
        check_not_shadowed("chaoseval_test_unique", tmp_path)  # on the path and found there
    check_not_shadowed("absent_module", tmp_path)  # no such file: the import will report it
