"""Reading YAML text into values, one result whichever of PyYAML's loaders reads it.

PyYAML's C loader (libyaml) imports a directory of case files about four times as fast as its
pure-Python one (``bench/import_bench.py``). But the two do not agree on everything, and the C
one recurses on the C stack once per level of nesting (a deep enough file crashes the
interpreter). So the C loader reads a text only when nothing in it reaches those places;
anything else, and anything the C loader refuses, is read by the pure-Python loader, whose
result (or refusal, and its wording) is the one that counts.

Both share one constructor, hardened where PyYAML's own lets an exception out or lets a small
file grow without bound: a scalar its tag cannot read (``!!int abc``, ``2024-13-45``) is a
``ConstructorError`` with its position, an integer too long to print stays a ``LongNumber``, and
merge keys (``<<``) may copy only so many entries in all.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ._text import one_line
from ._values import LongNumber, digit_limit, is_long, render

__all__ = ["MAX_MERGED_ENTRIES", "YamlUnreadable", "load_yaml"]

# Entries merge keys may copy in one file. Each ``<<: [*a, *a]`` copies what it merges, so a few
# lines of nested merges can ask for billions; real files merge a handful of entries.
MAX_MERGED_ENTRIES = 100_000

# The C loader's composer recurses once per level of nesting on the C stack, and every level
# needs one of these characters, so their count bounds the depth it can reach.
_NESTING = "[{-:?"
_C_MAX_NESTING = 5_000

# Where libyaml and PyYAML disagree, found by reading the same texts with both: tabs, byte-order
# marks inside the text, a lone "!" tag, a comment right after a block scalar's "|" or ">", and
# "?" closing a flow collection. A text holding any of them goes to the pure-Python loader.
_DISAGREE = re.compile(r"[\t\ufeff]|(?:^|[\s\[{,])!(?=[\s\]},]|$)|[|>][-+0-9]*#|\?[\]}]")

# What a YAML 1.1 integer can be written with: digits in bases 2 to 16, sexagesimal ":", "_".
_NUMERAL = re.compile(r"[-+]?[0-9a-fA-FxXoObB_:]+")


class YamlUnreadable(Exception):
    """The text is not YAML this importer can read; ``reason`` says why, on one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def load_yaml(text: str) -> Any:
    """The one document ``text`` holds, read with PyYAML's safe constructors (plus the
    hardening above). Raises ``YamlUnreadable``."""
    import yaml  # type: ignore[import-untyped]  # only the yaml path pays for it

    # YAML reads CRLF and CR as line breaks and gives LF in their place wherever they reach a
    # value; doing that first makes a Windows file the very text its LF twin is.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    fast, events, pure = _loaders()
    try:
        if fast is not None and not _DISAGREE.search(text):
            # A text too nested for the C composer still gets libyaml's parser (a state
            # machine, no recursion), composed by PyYAML's Python composer.
            loader = fast if _parser_bounds_nesting() or _shallow(text) else events
            try:
                return _load(loader, text)
            except yaml.YAMLError:
                pass  # the pure-Python loader decides, in its own words
        return _load(pure, text)
    except yaml.YAMLError as error:
        raise YamlUnreadable(_reason(error)) from None
    except RecursionError:
        raise YamlUnreadable("nested too deeply to read") from None


def _shallow(text: str) -> bool:
    return sum(text.count(ch) for ch in _NESTING) <= _C_MAX_NESTING


@functools.cache
def _parser_bounds_nesting() -> bool:
    """Whether libyaml's parser itself refuses a text nested past its own limit (1,000 levels
    since libyaml 0.2.5), which keeps the C composer's depth within a few thousand levels, the
    depth ``_C_MAX_NESTING`` already trusts it with: then any text may take the C loader, not
    only one with few nesting characters (a large config has tens of thousands). Found by
    parsing two texts nested 1,001 deep, flow and block; the parser alone does not recurse."""
    import yaml  # type: ignore[import-untyped]

    fast, _, _ = _loaders()
    if fast is None:
        return False
    from yaml.cyaml import CParser  # type: ignore[import-untyped]

    for probe in ("[" * 1001 + "]" * 1001, "- " * 1001 + "x"):
        parser = CParser(probe)
        try:
            while parser.check_event():
                parser.get_event()
        except yaml.YAMLError as error:
            if "maximum nesting depth" not in str(error):
                return False
        else:
            return False
        finally:
            parser.dispose()
    return True


def _load(loader_class: Any, text: str) -> Any:
    loader = loader_class(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _reason(error: Exception) -> str:
    problem = getattr(error, "problem", None)
    mark = getattr(error, "problem_mark", None)
    if problem is None:
        return one_line(" ".join(str(error).split()))
    context = getattr(error, "context", None)
    text = f"{context}, {problem}" if context else str(problem)
    if mark is not None:
        text += f" (line {mark.line + 1}, column {mark.column + 1})"
    return one_line(text)


@functools.cache
def _loaders() -> tuple[Any, Any, Any]:
    """The C loader class (``None`` without libyaml), the C parser with the Python composer
    (``None`` likewise), and the pure-Python one, all built on the hardened constructor. Built
    on first use, so importing this module stays cheap."""
    import yaml  # type: ignore[import-untyped]
    from yaml.constructor import ConstructorError, SafeConstructor  # type: ignore[import-untyped]
    from yaml.nodes import MappingNode, SequenceNode  # type: ignore[import-untyped]
    from yaml.resolver import Resolver  # type: ignore[import-untyped]

    class Constructor(SafeConstructor):  # type: ignore[misc]
        def __init__(self) -> None:
            SafeConstructor.__init__(self)
            self.merge_budget = MAX_MERGED_ENTRIES

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            # PyYAML's scalar constructors let ValueError, KeyError and the like out for values
            # their tag cannot read (``!!bool maybe``, ``!!timestamp 2024-13-45``): name the
            # value and where it is instead.
            try:
                return super().construct_object(node, deep)
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError):
                tag = str(node.tag).rsplit(":", 1)[-1]
                shown = render(node.value, 60) if isinstance(node.value, str) else node.id
                raise ConstructorError(
                    None, None, f"could not read {shown} as {tag}", node.start_mark
                ) from None

        def construct_yaml_int(self, node: Any) -> Any:
            written = self.construct_scalar(node)
            if _NUMERAL.fullmatch(written) and LongNumber(written).digits > digit_limit():
                # Converting it would take time quadratic in its length (Python refuses).
                return LongNumber(written)
            value = SafeConstructor.construct_yaml_int(self, node)
            return LongNumber(written) if is_long(value) else value

        def flatten_mapping(self, node: Any) -> None:
            # PyYAML's merge (``<<``), entry for entry, with a budget for the entries it copies.
            merge: list[Any] = []
            index = 0
            while index < len(node.value):
                key_node, value_node = node.value[index]
                if key_node.tag == "tag:yaml.org,2002:merge":
                    del node.value[index]
                    if isinstance(value_node, MappingNode):
                        merge.extend(self._merged(value_node, node))
                    elif isinstance(value_node, SequenceNode):
                        parts = []
                        for subnode in value_node.value:
                            if not isinstance(subnode, MappingNode):
                                raise ConstructorError(
                                    "while constructing a mapping",
                                    node.start_mark,
                                    f"expected a mapping for merging, but found {subnode.id}",
                                    subnode.start_mark,
                                )
                            parts.append(self._merged(subnode, node))
                        for part in reversed(parts):
                            merge.extend(part)
                    else:
                        raise ConstructorError(
                            "while constructing a mapping",
                            node.start_mark,
                            "expected a mapping or list of mappings for merging, "
                            f"but found {value_node.id}",
                            value_node.start_mark,
                        )
                elif key_node.tag == "tag:yaml.org,2002:value":
                    key_node.tag = "tag:yaml.org,2002:str"
                    index += 1
                else:
                    index += 1
            if merge:
                node.value = merge + node.value

        def _merged(self, subnode: Any, node: Any) -> list[Any]:
            self.flatten_mapping(subnode)
            self.merge_budget -= len(subnode.value)
            if self.merge_budget < 0:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"its merge keys (<<) copy more than {MAX_MERGED_ENTRIES:,} entries",
                    subnode.start_mark,
                )
            return list(subnode.value)

    Constructor.add_constructor("tag:yaml.org,2002:int", Constructor.construct_yaml_int)

    class PureLoader(
        yaml.reader.Reader,
        yaml.scanner.Scanner,
        yaml.parser.Parser,
        yaml.composer.Composer,
        Constructor,
        Resolver,
    ):
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            Constructor.__init__(self)
            Resolver.__init__(self)

    try:
        from yaml.cyaml import CParser as c_parser  # type: ignore[import-untyped]
    except ImportError:  # PyYAML built without libyaml
        return None, None, PureLoader

    class FastLoader(c_parser, Constructor, Resolver):  # type: ignore[misc, valid-type]
        def __init__(self, stream: str) -> None:
            c_parser.__init__(self, stream)
            Constructor.__init__(self)
            Resolver.__init__(self)

    class EventLoader(yaml.composer.Composer, c_parser, Constructor, Resolver):  # type: ignore[misc, valid-type]
        # The Python composer first in the order: it takes libyaml's events one at a time, and
        # its recursion is Python's, which stops at the recursion limit instead of the C stack.
        def __init__(self, stream: str) -> None:
            c_parser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            Constructor.__init__(self)
            Resolver.__init__(self)

    return FastLoader, EventLoader, PureLoader
