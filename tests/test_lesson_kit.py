"""The lesson kit's contract, for every lesson: controls declared once, text that names Readout
fields, conditions on bool fields, no two lessons sharing a URL key or importing each other.

Why: a placeholder that names no field, or a condition on a field that is not a bool, would
only show up when a learner reaches that paragraph; here every section of every lesson is
checked against the Readout its default build returns.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path

import pytest

from lessons.course import lessons
from lessons.kit import story
from lessons.kit.controls import BadValue, Steps, declared, shown

ROOT = Path(__file__).resolve().parents[1]
IDS = [lesson.id for lesson in lessons()]


def _module(lesson_id: str):
    return importlib.import_module(f"lessons.{lesson_id}.lesson")


@pytest.fixture(scope="module", params=IDS)
def built(request):
    mod = _module(request.param)
    return request.param, mod, mod.build(mod.Params())


def _fits(section, readout) -> bool:
    fields = {f.name: getattr(readout, f.name) for f in dataclasses.fields(readout)}
    if section.when is not None and not isinstance(fields.get(section.when), bool):
        return False
    return not story.placeholders(section.body) - set(fields)


def test_every_placeholder_and_condition_names_a_readout_field(built):
    """Each section is filled by one of the lesson's readouts (`readouts(p)` where a lesson has
    several, else its build), except the sections it fills with values of their own
    (`OWN_VALUES`: names, or prefixes ending in "-"), the exercises' and the charts' `labels`
    (filled by figures.py, per trace and per frame)."""
    lesson_id, mod, readout = built
    params = mod.Params()
    readouts = mod.readouts(params) if hasattr(mod, "readouts") else (readout,)
    own = ("exercise-", "labels", *getattr(mod, "OWN_VALUES", ()))
    path = ROOT / "lessons" / lesson_id / "text.md"
    for section in story.parse(path):
        if any(section.name == o or (o.endswith("-") and section.name.startswith(o)) for o in own):
            continue
        filled = [r for r in readouts if _fits(section, r)]
        assert filled, f"{lesson_id} section {section.name!r}: no readout has its fields"
        section.fill(filled[0])  # format specs fit the values


def test_every_control_accepts_its_default_and_its_extremes(built):
    _, mod, _ = built
    for d in declared(mod.Params):
        for value in (d.default, d.spec.lowest(), d.spec.highest()):
            assert d.spec.parse(d.spec.to_url(value)) == value


def test_url_keys_are_unique_across_lessons_except_shared_settings():
    seen: dict[str, str] = {}
    for lesson_id in IDS:
        mod = _module(lesson_id)
        for d in declared(mod.Params):
            key = d.url_key(mod.PREFIX)
            if d.spec.shared:
                continue
            assert key not in seen, f"{key} in {lesson_id} and {seen[key]}"
            seen[key] = lesson_id


def test_shared_settings_have_one_declaration():
    from lessons.kit import shared

    for lesson_id in IDS:
        for d in declared(_module(lesson_id).Params):
            if d.spec.shared:
                assert d.spec in (shared.GPU, shared.MODEL, shared.TP, shared.DTYPE)


def test_no_lesson_imports_another():
    for lesson_id in IDS:
        for path in (ROOT / "lessons" / lesson_id).glob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                for name in names:
                    parts = name.split(".")
                    if parts[0] == "lessons" and len(parts) > 1 and parts[1] in IDS:
                        assert parts[1] == lesson_id, f"{path} imports {name}"


def test_files_stay_small():
    for path in (ROOT / "lessons").glob("*/figures.py"):
        assert len(path.read_text().splitlines()) <= 300, path
    for path in (ROOT / "views").glob("*.py"):
        assert len(path.read_text().splitlines()) <= 80, path


@pytest.mark.parametrize(
    "hostile",
    [
        "`[Log in again here](https://evil.example/login)`",
        "x\n# Big heading\n![img](https://evil.example/a.png)",
        "<a href='https://evil.example'>hi</a>",
        ":red[alarm] :material/warning:",
        "mail me: a@evil.example or www.evil.example",
        "a" * 50_000,
    ],
)
def test_values_from_links_are_shown_as_plain_text(hostile):
    import markdown_it

    safe = shown(hostile)
    assert len(safe) < 200 and "\n" not in safe
    lowered = safe.lower()
    # GFM links bare URLs and addresses even when their marks are escaped: none may remain.
    assert "http" not in lowered and "www\\." not in lowered
    assert not re.search(r"@[A-Za-z0-9]", safe)
    html = markdown_it.MarkdownIt("gfm-like").enable("linkify").render(safe)
    for tag in ("<a", "<img", "<h1", "<code", "<strong", "<em"):
        assert tag not in html, html


def test_bad_value_messages_say_what_is_expected():
    mod = _module("step_cost")
    spec = {d.name: d.spec for d in declared(mod.Params)}["tokens"]
    with pytest.raises(BadValue, match="one of 1, 2, ..., 16,384"):
        spec.parse("3")


def test_a_short_option_list_reads_as_a_list():
    with pytest.raises(BadValue, match=r"^one of 1, 2, 4$"):
        Steps("k", options=(1, 2, 4)).parse("3")


def test_a_count_carries_its_noun_in_the_right_number():
    # "1 times" and "(1 preemptions)" were on screen
    section = story.Section("s", "{a:~time}; {b:~preemption}; {c:~more time|more times}; {d:.1f}")
    assert section.fill(None, {"a": 1, "b": 1200, "c": 1, "d": 2.25}) == (
        "1 time; 1,200 preemptions; 1 more time; 2.2"
    )
    assert section.fill(None, {"a": 0, "b": 1, "c": 3, "d": 0}) == (
        "0 times; 1 preemption; 3 more times; 0.0"
    )
