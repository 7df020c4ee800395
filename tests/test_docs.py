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


def repository_documents() -> set[str]:
    return {
        path.name
        for path in ROOT.rglob("*.md")
        if not {".venv", "var", "node_modules"} & set(path.relative_to(ROOT).parts)
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_document_a_page_names_is_in_the_repository(page):
    """Issue 38: pages cited the spec and decisions.md, which a clone did not have; the
    contract is now shipped in docs/spec/."""
    named = set(re.findall(r"\b([\w-]+\.md)\b", page.read_text()))
    assert named - repository_documents() == set()


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_no_page_repeats_a_paragraph(page):
    """Issue 38: docs/operations.md said the same paragraph about keys twice (the second
    time shorter): two paragraphs may not open with the same 150 characters."""
    openings = [p.strip()[:150] for p in page.read_text().split("\n\n") if len(p.strip()) > 150]
    assert not {o for o in openings if openings.count(o) > 1}


def test_every_setting_that_stops_start_up_is_listed_as_such():
    """Issue 38: a setting refused at start-up (ImproperlyConfigured) is in the configuration
    page's section saying so, not only in the table of what it means."""
    page = (ROOT / "docs/configuration.md").read_text()
    section = page.split("## Settings that stop the service at start-up")[1].split("\n## ")[0]
    listed = set(re.findall(r"`([A-Z][A-Z0-9_*]+)`", section))
    refused = set()
    for path in (ROOT / "config/settings").glob("*.py"):
        for call in re.findall(r"raise ImproperlyConfigured\((.*?)\)\s", path.read_text(), re.S):
            message = re.sub(r"\{[^}]*\}", "", " ".join(re.findall(r'"([^"]*)"', call)))
            refused |= set(re.findall(r"\b([A-Z][A-Z0-9_]*_[A-Z0-9_*]+)", message))
    assert len(refused) > 15, refused  # the pattern still finds them
    assert refused - listed == set()


def test_every_release_in_the_changelog_says_whether_it_has_a_contract_step():
    """docs/releases.md: an operator upgrading across several releases stops before each
    contract step, so each version heading says `contract step: none` or names it."""
    headings = re.findall(r"^## v\d+\.\d+\.\d+.*$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert [h for h in headings if not re.search(r"contract step: \S", h)] == []
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    released = [re.match(r"## v(\S+)", h).group(1) for h in headings]
    assert not released or released[0] == version.group(1)  # the newest is the version
