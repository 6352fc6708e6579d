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


#: Bounds on a workflow document. Aliases share one object, but everything that walks the data
#: (line map, schema validation, JSON dumps) expands them: nine levels of nine aliases each
#: ("billion laughs") are 9^9 values in a few lines. Real workflows have a few hundred.
MAX_VALUES = 20_000
#: Nesting deeper than this is refused before PyYAML's recursive composer hits Python's stack.
MAX_DEPTH = 64


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
    _check_depth(text, filename)
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines: dict = {(): node.start_mark.line + 1}
        # the line map first: it counts values with aliases expanded, before anything builds
        # or walks the data
        _walk(node, (), lines, loader, filename)
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, filename) from None
    finally:
        loader.dispose()
    return data, lines


def _check_depth(text: str, filename: str) -> None:
    """Refuse flow or block nesting deeper than MAX_DEPTH, scanning events (no recursion)."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=Loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise DocumentError(f"{filename}:{event.start_mark.line + 1}: nested more "
                                        f"than {MAX_DEPTH} levels deep")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, filename) from None


def _syntax_error(exc: yaml.YAMLError, filename: str) -> DocumentError:
    """PyYAML's error with the file and line in front (reader errors, e.g. a NUL byte, carry a
    character position instead of a mark)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f":{mark.line + 1}" if mark is not None else (
        f": character {exc.position}" if isinstance(exc, yaml.reader.ReaderError) else "")
    problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or exc
    return DocumentError(f"{filename}{where}: YAML syntax: {problem}")


def _walk(node, path: tuple, lines: dict, loader, filename: str) -> None:
    if len(lines) > MAX_VALUES:
        raise DocumentError(f"{filename}:{node.start_mark.line + 1}: more than {MAX_VALUES} "
                            "values once aliases are expanded (a workflow has a few hundred)")
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
