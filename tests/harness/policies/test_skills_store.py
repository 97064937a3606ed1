"""The skills store: its TOML format, retrieval rule and the bundled store."""

import pytest

from harness.core import ConfigError
from harness.policies.skills import BUNDLED_STORE, Skill, SkillStore, load_skill_store
from tasks import suite_ids

STORE = SkillStore("s.toml", "0" * 64, (
    Skill("any", "Generic."),
    Skill("lake-holes", "Holes.", suites=("frozenlake",), keywords=("hole", "O")),
    Skill("lake-8x8", "Big map.", suites=("frozenlake@1",), task_types=("8x8",)),
    Skill("lake", "Lake.", suites=("frozenlake",)),
))


def test_retrieval_filters_by_suite_and_task_type_then_ranks_by_keyword_hits():
    names = lambda found: [skill.name for skill in found]  # noqa: E731
    assert names(STORE.retrieve("frozenlake@1", "4x4", "a hole O here", k=4)) == \
        ["lake-holes", "any", "lake"]                       # 2 hits first, then file order
    assert names(STORE.retrieve("frozenlake@1", "8x8", "no match", k=4)) == \
        ["any", "lake-8x8", "lake"]                         # keywords without a hit drop out
    assert names(STORE.retrieve("frozenlake-slippery@1", "8x8", "", k=4)) == ["any"]
    assert names(STORE.retrieve("frozenlake@1", "4x4", "hole", k=1)) == ["lake-holes"]


@pytest.mark.parametrize("text, message", [
    ("[[skills]]\nname = 'a'\n", "needs a name and a non-empty text"),
    ("[[skills]]\nname = 'a'\ntext = 'x'\ncolour = 'red'\n", "unknown keys \\['colour'\\]"),
    ("[[skills]]\nname = 'a'\ntext = 'x'\nsuites = [1]\n", "suites must be a list of strings"),
    ("[[skills]]\nname = 'a'\ntext = 'x'\n[[skills]]\nname = 'a'\ntext = 'y'\n", "repeat"),
    ("skills = 3\n", "must be an array of tables"),
    ("[[skills]\n", "skills store"),
])
def test_a_malformed_store_is_one_config_error(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_skill_store(path)


def test_a_store_is_reread_when_its_file_changes_and_a_missing_one_is_an_error(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("[[skills]]\nname = 'a'\ntext = 'one'\n")
    first = load_skill_store(path)
    path.write_text("[[skills]]\nname = 'a'\ntext = 'two, longer'\n")
    second = load_skill_store(path)
    assert first.skills[0].text == "one" and second.skills[0].text == "two, longer"
    assert first.digest != second.digest
    with pytest.raises(ConfigError, match="does not exist"):
        load_skill_store(tmp_path / "missing.toml")


def test_every_bundled_skill_applies_to_a_registered_suite():
    store = load_skill_store()
    assert store.path == str(BUNDLED_STORE) and len(store.skills) >= 4
    registered = suite_ids()
    for skill in store.skills:
        assert not skill.task_types, skill.name  # any task type of its suites
        assert any(skill.applies_to(suite_id, "") for suite_id in registered), skill.name
