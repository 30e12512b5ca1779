"""Every YAML file a user edits, read one safe way: the stack files, Pulumi.yaml, the apps manifest
and the apps' chart values and CI files.

Read as Pulumi reads its files: its parser is go-yaml v3 (YAML 1.2), PyYAML's is YAML 1.1. The stack
files (Pulumi.<stack>.yaml) are Pulumi's, and Pulumi.yaml and the apps manifest are read by the same
rules, so that a value means the same in all: `on` is text, `010` is eight, a key given twice is an
error. Read safely: a regular file only (never a folder, a FIFO, a device), opened without blocking,
of a bounded size, nesting and alias expansion; every failure is a YamlFileError that names the file
and the fix for that cause.
"""

from __future__ import annotations

import base64
import binascii
import copy
import errno
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

import yaml

from shown import shown

MAX_BYTES = 64 * 1024
"""What a stack file, Pulumi.yaml or the apps manifest may hold: a few kilobytes each, so a larger
file is not the one meant (a log, a dump) and is refused before it is read; it also bounds what
PyYAML's pure-Python loader (tens of microseconds a value) spends on one. Bounds too what a
document holds with its aliases expanded: values, and characters of text."""
CHART_VALUES_MAX_BYTES = 5 * 1024 * 1024
"""What a chart's values.yaml (or an app's CI file) may hold: Helm refuses a chart file over 5 MiB
(helm pkg/chart/loader/archive/archive.go, `MaxDecompressedFileSize`)."""
MAX_DEPTH = 100
"""How deep values may nest, aliases expanded. go-yaml stops at 10,000 (scannerc.go, `max_flow_level`,
`max_indents`); Python's own stack (1,000 frames, a few per level in PyYAML) ends far sooner, and
no config, manifest or chart values nest a tenth as deep."""


class YamlFileError(Exception):
    """A YAML file that cannot be read, or is not valid YAML; the message names the file, the line and the fix."""


class _TooMuch(yaml.composer.ComposerError):
    """A document past a bound (nesting, aliases): not a slip on one line, so a fix of its own."""

    def __init__(self, problem: str, fix: str, mark: yaml.Mark | None = None) -> None:
        super().__init__(None, None, problem, mark)
        self.fix = fix


_FLATTEN = "write its values out flatter (no setting blueprint reads nests more than a few levels)"


class _Bounded(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a document nested deeper than MAX_DEPTH as it reads it (before
    Python's stack runs out), and one whose aliases expand it past what go-yaml takes, before it is built.
    """

    def __init__(self, stream: str, max_bytes: int = MAX_BYTES) -> None:
        super().__init__(stream)
        self.depth = 0
        self.max_bytes = max_bytes

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH and self.check_event(yaml.Event):
                raise _TooMuch(f"values nest more than {MAX_DEPTH} deep", _FLATTEN, self.current_event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def compose_document(self) -> yaml.Node | None:
        node = super().compose_document()
        if node is not None:
            _check_expansion(node, self.max_bytes)
        return node


class _PulumiYaml(_Bounded):
    """The bounded loader, reading scalars as Pulumi's YAML 1.2 parser (go-yaml v3) does, and not
    as YAML 1.1: only true/false (in YAML 1.2's three spellings) are booleans, so yes/no/on/off stay
    strings, which Pulumi refuses for a boolean key (workspace/project.go, `ValidateConfigValue`);
    integers are Go's literals (`strconv.ParseInt` with base 0: 0x, 0o, 0b, a leading 0 for octal,
    underscores), never YAML 1.1's base 60 (10:00 stays text); floats are YAML 1.2's (1e3 too).
    Every value is JSON's (text, number, true/false, null, list, mapping): `!!binary` is the text it
    encodes, and a tag go-yaml does not know (`!custom x`) is dropped, as go-yaml's decode.go does. A
    date differs: it stays the text written (`2001-12-14`), where go-yaml v3.0.1 decodes a time and
    Pulumi passes the program its Go form (`2001-12-14 00:00:00 +0000 UTC`); no setting blueprint
    reads is a date. `=` is text (YAML 1.1's `value` tag is not YAML 1.2's). Of a file of several
    documents, the first is read, as go-yaml's Unmarshal does; `%YAML 1.2` is refused, as go-yaml
    reads no version but 1.1. A tab that separates (`key:<tab>2`) go-yaml reads and PyYAML does not:
    the message says so.
    """


_ALIAS_LOW, _ALIAS_HIGH = 400_000, 4_000_000


def _allowed_alias_ratio(values: int) -> float:
    """go-yaml v3's (decode.go, `allowedAliasRatio`): of a document's values, the share that may
    come from aliases: 99% up to 400,000 values, falling to 10% at 4,000,000.
    """
    if values <= _ALIAS_LOW:
        return 0.99
    if values >= _ALIAS_HIGH:
        return 0.10
    return 0.99 - 0.89 * (values - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW)


def _check_expansion(root: yaml.Node, max_bytes: int) -> None:
    """Refuse a document whose aliases make it too large or too deep once expanded (a "billion
    laughs" of a few hundred bytes), or that holds itself, as go-yaml v3 does ("document contains
    excessive aliasing", decode.go): PyYAML shares an aliased value instead, but whatever walks the
    values (a check, a message, the plan's JSON) would walk every copy. Past go-yaml's own bound, the
    values and the characters of text they hold, aliases expanded, are each bounded by `max_bytes`,
    what the file may hold. Counted on the nodes, each once, so the count stays as cheap as the file is small.
    """
    expanded: dict[int, tuple[int, int, int]] = {}  # node -> (values, its depth, characters), aliases expanded
    open_nodes: set[int] = set()
    # As go-yaml counts (decode.go, `unmarshal`), in document order: every value decoded, and those
    # decoded through an alias, checked after each alias (the share only rises within one).
    counts = {"decoded": 1, "aliased": 0}

    def walk(node: yaml.Node, depth: int) -> tuple[int, int, int]:
        if id(node) in expanded:  # a second sight of a node: an alias (*name)
            count, below, size = expanded[id(node)]
            counts["decoded"] += 1 + count
            counts["aliased"] += count
            decoded, aliased = counts["decoded"], counts["aliased"]
            if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_alias_ratio(decoded):
                raise _TooMuch(
                    'its aliases (*name) expand it more than Pulumi\'s parser takes ("document contains excessive aliasing")',
                    "write the values out in full, with fewer aliases",
                    node.start_mark,
                )
        elif id(node) in open_nodes:
            raise _TooMuch("an alias (*name) names the value that holds it, so it never ends", "remove that alias", node.start_mark)
        else:
            open_nodes.add(id(node))
            counts["decoded"] += 1
            children = node.value if isinstance(node, yaml.SequenceNode) else []
            if isinstance(node, yaml.MappingNode):
                children = [part for pair in node.value for part in pair]
            count, below, size = 1, 1, len(node.value) if isinstance(node, yaml.ScalarNode) else 0
            for child in children:
                known = id(child) in expanded
                child_count, child_below, child_size = walk(child, depth + 1)
                count, below, size = count + child_count + known, max(below, child_below + 1), size + child_size
            open_nodes.discard(id(node))
            expanded[id(node)] = (count, below, size)
        if depth + below - 1 > MAX_DEPTH:
            raise _TooMuch(f"with its aliases (*name) expanded, values nest more than {MAX_DEPTH} deep", _FLATTEN, node.start_mark)
        if count > max_bytes or size > max_bytes:
            what = f"{count:,} values" if count > max_bytes else f"{size:,} characters of text"
            raise _TooMuch(
                f"with its aliases (*name) expanded, it holds {what}, more than the {max_bytes:,} blueprint reads",
                "write the values out in full, with fewer aliases",
                node.start_mark,
            )
        return count, below, size

    walk(root, 1)


def _unique_mapping(loader: _PulumiYaml, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    """A mapping, refusing a key given twice, as Pulumi's parser does ("mapping key already defined"),
    and a key that is not a plain value (a list, a mapping).
    """
    seen: set[str] = set()
    # As go-yaml v3 (decode.go, uniqueKeys): keys are the same when written the same, so `1` and `01`
    # are two keys (the later wins, as in Go's map; so too `1` and `true`, one key to Python), and `1`
    # and `"1"` one; only the keys written out count, so one may override a merged (<<) key, and a
    # second `<<` is refused. Merged keys come in after, with PyYAML's flatten_mapping.
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
            raise yaml.constructor.ConstructorError(None, None, f"a key must be a name, not a {kind}", key_node.start_mark)
        if key_node.value in seen:
            raise yaml.constructor.ConstructorError(None, None, f"the key {shown(key_node.value)} is given twice", key_node.start_mark)
        seen.add(key_node.value)
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=deep)


_GO_INT = re.compile(r"^[-+]?(?:0[bB]_?[01][01_]*|0[oO]_?[0-7][0-7_]*|0[xX]_?[0-9a-fA-F][0-9a-fA-F_]*|0[0-7_]*|[1-9][0-9_]*)$")
_YAML12_FLOAT = re.compile(
    # go-yaml drops underscores before it matches a float (resolve.go), and PyYAML's float constructor drops them too.
    r"^(?:[-+]?(?:\.[0-9][0-9_]*|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


def _go_int(loader: _PulumiYaml, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node)).replace("_", "")
    sign, digits = (-1, text[1:]) if text.startswith("-") else (1, text.lstrip("+"))
    if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
        return sign * int(digits, 8)  # Go's leading-zero octal
    return sign * int(digits, 0)


def _written(loader: _PulumiYaml, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _sequence(loader: _PulumiYaml, node: yaml.SequenceNode) -> list[Any]:
    return loader.construct_sequence(node)


def _binary_text(loader: _PulumiYaml, node: yaml.ScalarNode) -> str:
    try:
        return base64.b64decode(str(loader.construct_scalar(node)), validate=False).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        raise yaml.constructor.ConstructorError(None, None, "!!binary value is not base64", node.start_mark) from None


_PulumiYaml.add_constructor("tag:yaml.org,2002:map", _unique_mapping)
_PulumiYaml.add_constructor("tag:yaml.org,2002:int", _go_int)
_PulumiYaml.add_constructor("tag:yaml.org,2002:timestamp", _written)
_PulumiYaml.add_constructor("tag:yaml.org,2002:binary", _binary_text)
# Tags go-yaml does not know: their values as any other list or mapping.
_PulumiYaml.add_constructor("tag:yaml.org,2002:omap", _sequence)
_PulumiYaml.add_constructor("tag:yaml.org,2002:pairs", _sequence)
_PulumiYaml.add_constructor("tag:yaml.org,2002:set", _unique_mapping)


def _untagged(loader: _PulumiYaml, suffix: str, node: yaml.Node) -> Any:
    """A value with a tag nobody defines (`!custom x`): the value itself, as go-yaml reads it."""
    if isinstance(node, yaml.ScalarNode):
        return _written(loader, node)
    if isinstance(node, yaml.SequenceNode):
        return _sequence(loader, node)
    assert isinstance(node, yaml.MappingNode)  # the third kind  # noqa: S101
    return _unique_mapping(loader, node)


_PulumiYaml.add_multi_constructor("", _untagged)
_PulumiYaml.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag.rsplit(":", 1)[-1] not in ("bool", "int", "float", "value")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_PulumiYaml.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_PulumiYaml.add_implicit_resolver("tag:yaml.org,2002:int", _GO_INT, list("-+0123456789"))
_PulumiYaml.add_implicit_resolver("tag:yaml.org,2002:float", _YAML12_FLOAT, list("-+0123456789."))


def load_file(path: Path, *, missing: str | None = None, max_bytes: int = MAX_BYTES) -> Any:
    """The YAML document in `path`, read by Pulumi's rules, or a YamlFileError naming the file and
    the fix. `missing`: the fix when there is no file; without it, no file reads as an empty one (None).
    """
    text = read_file(path, missing=missing, max_bytes=max_bytes)
    # Parsed once per run (a plan reads a stack file several times), read anew each time: a file
    # changed since is parsed again. A copy, as a caller may change what it is given.
    return None if text is None else copy.deepcopy(_parsed(text, str(path), max_bytes))


_PARSED: dict[tuple[str, int], Any] = {}
"""The documents of the last texts parsed, by text: what a text reads as does not depend on the
file it came from (only a refusal names the file, and a refusal is not kept)."""


_PARSED_LOCK = threading.Lock()
"""Held to look up, add and evict: `verify` reads files from several threads at once."""


def _parsed(text: str, where: str, max_bytes: int) -> Any:
    key = (text, max_bytes)
    with _PARSED_LOCK:
        if key in _PARSED:
            return _PARSED[key]
    document = load_text(text, where, max_bytes=max_bytes)  # outside the lock: a parse holds no other thread up
    with _PARSED_LOCK:
        if key not in _PARSED and len(_PARSED) >= 16:
            del _PARSED[next(iter(_PARSED))]  # the oldest
        _PARSED[key] = document
    return document


def load_text(text: str, where: str, *, pulumi_rules: bool = True, max_bytes: int = MAX_BYTES) -> Any:
    """The YAML document `text` (from `where`, a file): by Pulumi's rules, or PyYAML's YAML 1.1 ones
    (`pulumi_rules=False`: a chart's values, which Helm reads, and GitLab CI files), bounded the same way.
    """
    if len(text) > max_bytes:
        raise YamlFileError(f"{where} is {len(text):,} characters, more than the {max_bytes:,} blueprint reads; {_SMALLER}")
    loader = (_PulumiYaml if pulumi_rules else _Bounded)(text, max_bytes)
    try:
        # The first document, as go-yaml's Unmarshal reads it (whatever follows is not even parsed).
        node = loader.get_node() if loader.check_node() else None
        version = getattr(loader, "yaml_version", None)  # the first document's %YAML, if any
        if pulumi_rules and version not in (None, (1, 1)):
            raise YamlFileError(
                f"{where} starts `%YAML {'.'.join(map(str, version))}`, which Pulumi's parser refuses (it reads YAML 1.1's "
                "directive alone, and 1.2 without one); remove that line"
            )
        return None if node is None else loader.construct_document(node)
    except RecursionError:  # a safety net: MAX_DEPTH is checked well before
        raise YamlFileError(f"{where} nests values too deeply to read; {_FLATTEN}") from None
    except _TooMuch as error:
        raise YamlFileError(f"{where} cannot be read: {problem(error)}; {error.fix}") from None
    except yaml.scanner.ScannerError as error:
        if "'\\t'" not in str(error.problem):
            raise YamlFileError(f"{where} is not valid YAML: {problem(error)}; fix that line and run again") from None
        at = f"line {error.problem_mark.line + 1}, column {error.problem_mark.column + 1}" if error.problem_mark else "a line"
        raise YamlFileError(f"{where}: PyYAML, which blueprint reads it with, cannot read a tab at {at} (Pulumi can); use spaces") from None
    except yaml.YAMLError as error:
        raise YamlFileError(f"{where} is not valid YAML: {problem(error)}; fix that line and run again") from None
    finally:
        loader.dispose()


_SMALLER = "is it the file you meant? keep it to the settings it needs"
_KINDS = {stat.S_IFIFO: "a FIFO (a named pipe)", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device", stat.S_IFSOCK: "a socket"}


def read_file(path: Path, *, missing: str | None = None, max_bytes: int = MAX_BYTES) -> str | None:
    """The text of the regular file `path` (None when there is none and `missing` is None), or a
    YamlFileError that names the file and the fix for what is wrong. Opened without blocking and
    checked on the opened file, so a FIFO put there after a look cannot hang the read.
    """
    try:
        linked = os.readlink(path) if path.is_symlink() else None
    except OSError:
        linked = None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ENOENT and linked is not None:
            raise YamlFileError(f"{path} is a link to {linked}, which does not exist; point the link at the file, or remove it") from None
        if error.errno == errno.ENOENT:
            if missing is None:
                return None
            raise YamlFileError(f"{path} is missing; {missing}") from None
        raise YamlFileError(_unopened(path, error)) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        through = f" (through the link to {linked})" if linked is not None else ""
        if stat.S_ISDIR(mode):
            raise YamlFileError(f"{path} is a folder{through}, not a file; remove or rename the folder, and put the file there")
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise YamlFileError(f"{path} is {kind}{through}, not a regular file; replace it with the YAML file itself")
    with os.fdopen(fd, "rb") as opened:
        try:
            data = opened.read(max_bytes + 1)
        except OSError as error:
            raise YamlFileError(f"{path} cannot be read ({error.strerror}); copy it anew, or restore it with git") from None
    if len(data) > max_bytes:
        raise YamlFileError(f"{path} holds more than {max_bytes:,} bytes, the most blueprint reads; {_SMALLER}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line, column = data.count(b"\n", 0, error.start) + 1, error.start - data.rfind(b"\n", 0, error.start)
        raise YamlFileError(
            f"{path} is not UTF-8 text (line {line}, column {column} holds the byte {data[error.start]:#04x}); save it as UTF-8"
        ) from None


def _unopened(path: Path, error: OSError) -> str:
    """What is wrong with a file that cannot be opened, and its fix."""
    if error.errno in (errno.EACCES, errno.EPERM):
        if os.access(path.parent, os.X_OK):
            return f"{path} cannot be read: you may not read it; `chmod u+r {path}`"
        return f"{path} cannot be read: you may not open its folder; `chmod u+rx {path.parent}`"
    if error.errno == errno.ELOOP:
        return f"{path} is a link that leads round in a circle; point it at the file, or remove it"
    if error.errno == errno.ENOTDIR:
        return f"{path} cannot be read: a part of its path is a file, not a folder; rename that file"
    if error.errno == errno.ENXIO:
        return f"{path} is a socket, not a regular file; replace it with the YAML file itself"
    return f"{path} cannot be read ({error.strerror}); it must be a file you can read"


def problem(error: yaml.YAMLError) -> str:
    """What the parser says is wrong, with the line and column, in one line."""
    mark = getattr(error, "problem_mark", None)
    said = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"{said} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else str(said)
