"""The README and docs/ as a clone has them (issues 23 and 24): a short README, every setting
on docs/configuration.md, and links that resolve inside the repository."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
# Where settings are read: a call naming an upper-case variable.
SETTINGS_READ = r'(?:env(?:\.\w+)?|_required_unless_debug)\(\s*"([A-Z][A-Z0-9_]+)"'
READERS = {
    **{
        f"config/settings/{path.name}": SETTINGS_READ
        for path in (ROOT / "config/settings").glob("*.py")
    },
    "scripts/serve.py": r'(?:setting|os\.environ\.get)\(\s*"([A-Z][A-Z0-9_]+)"',
}
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def settings_read() -> set[str]:
    names = set()
    for path, pattern in READERS.items():
        names |= set(re.findall(pattern, (ROOT / path).read_text()))
    return names


def test_every_setting_read_is_on_the_configuration_page():
    documented = set(
        re.findall(r"`([A-Z][A-Z0-9_]+)`", (ROOT / "docs/configuration.md").read_text())
    )
    read = settings_read()
    assert len(read) > 60, read  # the patterns still find them
    assert read - documented == set()


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 110


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_links_resolve_inside_the_repository(page):
    """A clone has no ../shared/: a link leaving the repository, or to a missing file, fails."""
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto
        resolved = (page.parent / target).resolve()
        assert resolved.is_relative_to(ROOT), f"{page.name} links outside the repository: {target}"
        assert resolved.exists(), f"{page.name} links to a missing file: {target}"


def test_the_readme_hard_codes_no_port():
    """Commands and URLs follow whatever PORT is set."""
    text = (ROOT / "README.md").read_text()
    allowed = len(re.findall(r"\$\{PORT:-8000\}|8000 unless", text))
    assert text.count("8000") == allowed > 0
