"""Reading a YAML document together with the line of every key, for errors that point at lines.

PyYAML's composed node tree carries a start mark per node; walking it beside the constructed
data gives a map from key path (a tuple of keys and list indices) to a 1-based line number.
"""

from __future__ import annotations

import re

import yaml

# YAML 1.1 (PyYAML) reads ``1e-3`` as a string because its float pattern wants a dot; workflow
# authors write regularization constants that way, so numbers without a dot are floats here too.
_FLOAT = re.compile(r"""^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?
                    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                    |\.(?:inf|Inf|INF)|[-+]\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X)


class Loader(yaml.SafeLoader):
    """A safe loader whose floats include exponent forms without a dot (``1e-3``)."""


Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:float"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
# An integer literal still wins: int's resolver runs before the float one we just added.


class DocumentError(ValueError):
    """A YAML file that cannot be read: syntax errors and duplicate keys, with file and line."""


def parse_scalar(text: str):
    """A ``--set`` value read as YAML (``3`` -> int, ``1e-3`` -> float, ``[1, 2]`` -> list)."""
    return yaml.load(text, Loader=Loader) if text.strip() else ""


def load_with_lines(text: str, filename: str) -> tuple[object, dict]:
    """Parse ``text``; return ``(data, lines)`` where ``lines[path]`` is a 1-based line number.

    Raises
    ------
    DocumentError
        On a YAML syntax error or a key given twice in one mapping (PyYAML would silently keep
        the last one, and a workflow that trains with a different gamma than its author read
        is worse than an error).
    """
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise DocumentError(f"{filename}{line}: YAML syntax: {exc.problem or exc}") from None
    finally:
        loader.dispose()
    lines: dict = {(): node.start_mark.line + 1}
    _walk(node, (), lines, loader, filename)
    return data, lines


def _walk(node, path: tuple, lines: dict, loader, filename: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen = set()
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)):
                continue
            if key in seen:
                raise DocumentError(f"{filename}:{key_node.start_mark.line + 1}: "
                                    f"{format_path(path + (key,))}: key given twice")
            seen.add(key)
            lines[path + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, path + (key,), lines, loader, filename)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[path + (i,)] = item.start_mark.line + 1
            _walk(item, path + (i,), lines, loader, filename)


def format_path(path) -> str:
    """``('estimator', 'params', 'gamma')`` -> ``estimator.params.gamma``; indices as ``[i]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"
