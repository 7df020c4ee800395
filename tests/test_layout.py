"""The suite stands on the service and its own helpers, never on the benchmarks (issue 23
item 2): bench/ may use the tests' tools (the fault proxy, the webhook receiver), not the other
way round. Only tests/faults, which checks the fault-injection suite itself, imports bench/."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
BENCH_HARNESS_TESTS = TESTS / "faults"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_test_but_the_fault_suites_own_imports_bench():
    importers = [
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("*.py")
        if BENCH_HARNESS_TESTS not in path.parents
        and any(name.split(".")[0] == "bench" for name in imported_modules(path))
    ]
    assert importers == []
