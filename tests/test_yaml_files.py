"""yaml_files, the one reader of the YAML files a user edits: bounded as Pulumi's parser (go-yaml v3)
is, and no stricter where a file is fine. The refusals themselves are rows of tests/test_bad_inputs.py."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import yaml_files
from yaml_files import MAX_DEPTH, YamlFileError, load_file, load_text


def test_aliases_that_go_yaml_takes_are_read() -> None:
    """go-yaml refuses a document only when nearly all of it (99% of up to 400,000 values) comes from aliases."""
    text = "base: &base {" + ", ".join(f"k{i}: {i}" for i in range(10)) + "}\n" + "".join(f"v{i}: *base\n" for i in range(200))
    document = load_text(text, "values.yaml")
    assert document["v199"] == document["base"]


def test_values_nested_as_deep_as_the_bound_are_read() -> None:
    depth = MAX_DEPTH - 1  # the document's own mapping is one level
    assert load_text("x: " + "[" * depth + "]" * depth + "\n", "deep.yaml") is not None
    with pytest.raises(YamlFileError, match=f"values nest more than {MAX_DEPTH} deep"):
        load_text("x: " + "[" * (depth + 1) + "]" * (depth + 1) + "\n", "deeper.yaml")


# Each text below was run through go-yaml v3.0.1's yaml.Unmarshal (Pulumi's parser): what it decodes.
GO_YAML_READS = {
    "two-documents-the-first-read": ("config:\n  blueprint:x: 2\n---\nconfig: [\n", {"config": {"blueprint:x": 2}}),
    "keys-1-and-01-the-later-wins": ("x: {1: a, 01: b}\n", {"x": {1: "b"}}),
    "keys-1-and-1.0": ("x: {1: a, 1.0: b}\n", None),
    "keys-1-and-true": ("x: {1: a, true: b}\n", None),  # two keys to Go, one to Python: no "given twice"
    "keys-null-and-tilde": ("x: {null: a, ~: b}\n", {"x": {None: "b"}}),
    "equals-sign-is-text": ("x: =\n", {"x": "="}),
    "a-local-tag-is-dropped": ("a: !custom 5\nb: !custom [1]\nc: !custom {x: 1}\n", {"a": "5", "b": [1], "c": {"x": 1}}),
    "yaml-1.1-directive": ("%YAML 1.1\n---\nx: 1\n", {"x": 1}),
}


@pytest.mark.parametrize("name", GO_YAML_READS)
def test_what_pulumis_parser_reads_is_read(name: str) -> None:
    text, value = GO_YAML_READS[name]
    document = load_text(text, name)
    if value is not None:
        assert document == value


GO_YAML_REFUSES = {
    "merge-key-twice": ("x:\n  <<: {a: 1}\n  <<: {b: 2}\n", "the key '<<' is given twice"),
    "keys-1-and-quoted-1": ('x: {1: a, "1": b}\n', "the key '1' is given twice"),
    "yaml-1.2-directive": ("%YAML 1.2\n---\nx: 1\n", "starts `%YAML 1.2`, which Pulumi's parser refuses"),
    # go-yaml counts aliases in document order: plain values after them do not make up for them.
    "front-loaded-aliases": (
        "a: &a [" + ",".join(["1"] * 200) + "]\nb: [" + ",".join(["*a"] * 1000) + "]\nc: [" + ",".join(["2"] * 10000) + "]\n",
        "excessive aliasing",
    ),
}


@pytest.mark.parametrize("name", GO_YAML_REFUSES)
def test_what_pulumis_parser_refuses_is_refused(name: str) -> None:
    text, says = GO_YAML_REFUSES[name]
    with pytest.raises(YamlFileError, match=re.escape(says)):
        load_text(text, name, max_bytes=1_000_000)


@pytest.mark.parametrize("text", ["x:\t2\n", "x: 2\t# two\n"], ids=["after-a-colon", "before-a-comment"])
def test_a_separating_tab_is_said_to_be_pyyamls_limit_not_a_fault(text: str) -> None:
    """go-yaml reads it; PyYAML cannot: the message says which, and the fix, not "not valid YAML"."""
    with pytest.raises(
        YamlFileError, match=r"PyYAML, which blueprint reads it with, cannot read a tab at line 1, column \d+ \(Pulumi can\); use spaces"
    ):
        load_text(text, "tabs.yaml")


def test_aliased_text_is_bounded_by_its_size_not_only_its_count() -> None:
    """20 aliases of a 5,000-character text: few values, 100,000 characters once expanded."""
    text = "a: &a " + "x" * 5000 + "\nb: [" + ", ".join(["*a"] * 20) + "]\n"
    with pytest.raises(YamlFileError, match="it holds 100,000 characters of text, more than the 65,536 blueprint reads"):
        load_text(text, "big.yaml")


def test_a_refusal_of_a_huge_key_is_short() -> None:
    text = "x: &a " + "a" * 300_000 + "\n? [" + ", ".join(["*a"] * 900) + "]\n: 1\n"
    with pytest.raises(YamlFileError) as error:
        load_text(text, "key.yaml", max_bytes=400_000)
    assert len(str(error.value)) < 500


def test_a_file_is_parsed_once_while_it_stays_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML's pure-Python loader takes tens of microseconds a value, and a plan reads a stack file several times."""
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("config:\n  blueprint:x: [1]\n")
    parsed: list[str] = []
    real = yaml_files.load_text

    def counted(text: str, where: str, **kw: Any) -> Any:
        parsed.append(where)
        return real(text, where, **kw)

    monkeypatch.setattr(yaml_files, "load_text", counted)
    monkeypatch.setattr(yaml_files, "_PARSED", {})  # whatever the tests before parsed
    first = load_file(path)
    first["config"]["blueprint:x"].append(2)  # what a caller does with its copy stays its own
    assert load_file(path) == {"config": {"blueprint:x": [1]}}
    path.write_text("config:\n  blueprint:x: [3]\n")
    assert load_file(path) == {"config": {"blueprint:x": [3]}}
    assert parsed == [str(path), str(path)]


def test_a_text_read_again_from_another_file_is_not_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's copy of Pulumi.yaml, and each checkout's, reads as the text it holds; a refusal names its own file."""
    parsed: list[str] = []
    real = yaml_files.load_text

    def counted(text: str, where: str, **kw: Any) -> Any:
        parsed.append(where)
        return real(text, where, **kw)

    monkeypatch.setattr(yaml_files, "load_text", counted)
    monkeypatch.setattr(yaml_files, "_PARSED", {})
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text("config:\n  blueprint:x: [1]\n")
        assert load_file(tmp_path / name) == {"config": {"blueprint:x": [1]}}
    assert parsed == [str(tmp_path / "a.yaml")]
    for name in ("c.yaml", "d.yaml"):
        (tmp_path / name).write_text("config: [\n")
        with pytest.raises(YamlFileError) as error:
            load_file(tmp_path / name)
        assert str(error.value).startswith(f"{tmp_path / name} is not valid YAML")


def test_threads_reading_files_at_once_never_use_the_parse_cache_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`verify` reads files from several threads: one thread's eviction while another looks up or adds
    lost a parse (KeyError) or broke the iteration. The first thread is held inside the cache until
    the second has reached it, at the cache's lock or inside it: inside, the two would overlap."""
    reached = threading.Event()  # the second thread is at the cache
    held = threading.Event()  # the first thread is inside it
    state = {"inside": 0, "most": 0}
    count = threading.Lock()

    class Watched(dict[Any, Any]):
        def __contains__(self, key: object) -> bool:
            with at_the_cache():
                return super().__contains__(key)

        def __getitem__(self, key: Any) -> Any:
            with at_the_cache():
                return super().__getitem__(key)

        def __setitem__(self, key: Any, value: Any) -> None:
            with at_the_cache():
                super().__setitem__(key, value)

    @contextlib.contextmanager
    def at_the_cache() -> Iterator[None]:
        with count:
            state["inside"] += 1
            state["most"] = max(state["most"], state["inside"])
        if threading.current_thread().name == "second":
            reached.set()
        elif not held.is_set():
            held.set()
            assert reached.wait(30), "the second thread never reached the cache"
        yield
        with count:
            state["inside"] -= 1

    class Signalling:
        """The cache's lock, which says when the second thread has reached it."""

        def __init__(self) -> None:
            self.lock = threading.Lock()

        def __enter__(self) -> None:
            if threading.current_thread().name == "second":
                reached.set()
            self.lock.acquire()

        def __exit__(self, *_: object) -> None:
            self.lock.release()

    monkeypatch.setattr(yaml_files, "_PARSED", Watched())
    monkeypatch.setattr(yaml_files, "_PARSED_LOCK", Signalling(), raising=False)
    read: dict[str, Any] = {}
    for name in ("first", "second"):
        (tmp_path / f"{name}.yaml").write_text(f"config:\n  blueprint:{name}: 1\n")
    first = threading.Thread(target=lambda: read.update(first=load_file(tmp_path / "first.yaml")), name="first")
    second = threading.Thread(target=lambda: read.update(second=load_file(tmp_path / "second.yaml")), name="second")
    first.start()
    assert held.wait(30)
    second.start()
    first.join()
    second.join()
    assert read == {name: {"config": {f"blueprint:{name}": 1}} for name in ("first", "second")}
    assert state["most"] == 1
