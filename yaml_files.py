"""YAML files as Pulumi reads them: its parser is go-yaml v3 (YAML 1.2), PyYAML's is YAML 1.1.

The stack files (Pulumi.<stack>.yaml) are Pulumi's, and the apps manifest is read by the same rules,
so that a value means the same in both: `on` is text, `010` is eight, a key given twice is an error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml


class YamlFileError(Exception):
    """A YAML file that cannot be read, or is not valid YAML; the message names the file, the line and the fix."""


class _PulumiYaml(yaml.SafeLoader):
    """PyYAML's safe loader, reading scalars as Pulumi's YAML 1.2 parser (go-yaml v3) does, and not
    as YAML 1.1: only true/false (in YAML 1.2's three spellings) are booleans, so yes/no/on/off stay
    strings, which Pulumi refuses for a boolean key (workspace/project.go, `ValidateConfigValue`);
    integers are Go's literals (`strconv.ParseInt` with base 0: 0x, 0o, 0b, a leading 0 for octal,
    underscores), never YAML 1.1's base 60 (10:00 stays text); floats are YAML 1.2's (1e3 too).
    """


def _unique_mapping(loader: _PulumiYaml, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    """A mapping, refusing a key given twice, as Pulumi's parser does ("mapping key already defined"),
    and a key that is not a plain value (a list, a mapping).
    """
    seen: set[Any] = set()
    # Only the keys written out count, as in go-yaml v3 (decode.go, uniqueKeys): one may override a
    # merged (<<) key, and wins; merged keys come in after, with PyYAML's flatten_mapping.
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool | None):
            raise yaml.constructor.ConstructorError(None, None, f"a key must be a name, not {key!r}", key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice", key_node.start_mark)
        seen.add(key)
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


_PulumiYaml.add_constructor("tag:yaml.org,2002:map", _unique_mapping)
_PulumiYaml.add_constructor("tag:yaml.org,2002:int", _go_int)
_PulumiYaml.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag.rsplit(":", 1)[-1] not in ("bool", "int", "float")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_PulumiYaml.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_PulumiYaml.add_implicit_resolver("tag:yaml.org,2002:int", _GO_INT, list("-+0123456789"))
_PulumiYaml.add_implicit_resolver("tag:yaml.org,2002:float", _YAML12_FLOAT, list("-+0123456789."))


def load_file(path: Path) -> Any:
    """The YAML document in `path`, or a YamlFileError naming the file, the line and the fix."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise YamlFileError(f"{path}: cannot be read ({error}); it must be a YAML file you can read (`chmod u+r`)") from None
    try:
        return yaml.load(text, Loader=_PulumiYaml)  # noqa: S506 - a safe loader
    except yaml.YAMLError as error:
        raise YamlFileError(f"{path} is not valid YAML: {problem(error)}; fix that line and run again") from None


def problem(error: yaml.YAMLError) -> str:
    """What the parser says is wrong, with the line and column, in one line."""
    mark = getattr(error, "problem_mark", None)
    said = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"{said} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else str(said)
