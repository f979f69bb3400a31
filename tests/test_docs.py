"""The documentation stays true: links resolve, the command reference is generated and current,
and the README keeps its front-page shape (the CI hook looks for the two commands early)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    out, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and (m := re.match(r"#{1,6} (.+)", line)):
            out.add(_slug(m.group(1)))
    return out


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [a or b for a, b in LINK.findall(text)]


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    broken = []
    checked = 0
    for doc in DOCS:
        for target in _links(doc):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = (doc.parent / file_part).resolve() if file_part else doc
            checked += 1
            if not dest.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert checked > 20
    assert not broken, "\n".join(broken)


def test_the_link_check_catches_a_broken_link(tmp_path) -> None:  # type: ignore[no-untyped-def]
    doc = tmp_path / "x.md"
    doc.write_text("# Top\n[a](missing.md) [b](#top) `[c](not-a-link.md)`\n")
    assert _links(doc) == ["missing.md", "#top"]
    assert "top" in _anchors(doc) and _slug("Heartbeat: the persona checks in") == "heartbeat-the-persona-checks-in"


def test_the_command_reference_is_generated_from_the_commands_and_current() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen-cli-doc.py"), "--check"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in ("hearthside plugins install", "hearthside soul approve", "hearthside doctor",
                    "hearthside memory undo", "hearthside mcp set-secret", "hearthside model set-key"):
        assert f"`{command}`" in text


def test_the_readme_is_a_front_page_with_the_two_commands_on_its_first_screen() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    first = "\n".join(lines[:60])
    assert "make run" in first and "make test" in first
    assert "](docs/tray-menu.png)" in "\n".join(lines)  # the tray as it is today
    for doc in ("install.md", "guide.md", "cli.md", "packs.md", "design.md"):
        assert (ROOT / "docs" / doc).exists() and f"docs/{doc}" in "\n".join(lines)
    assert (ROOT / "CHANGELOG.md").exists()
    assert (ROOT / "docs" / "packs.md").read_text(encoding="utf-8").count("## The plugin API (hearthside.plugin)") == 1
