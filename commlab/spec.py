"""Parse the strings a user types for a dimension: ``"ssp(staleness=2)"``, ``"ps(shards=4)"``,
``"topk(0.01)+ef"``.

A spec is ``name`` or ``name(arg, key=value, ...)`` with Python literals as arguments;
``+`` joins several specs (a compressor and its error-feedback wrapper, a schedule and
its fusion). Names are matched case-insensitively with ``-`` read as ``_``.

A :class:`Registry` builds a joined spec left to right: the leading names are the *parts*
("topk(0.01)+qsgd(levels=16)"), the trailing ones its *wrappers* ("+ef"). One part is built
alone; several are handed, built, to the registry's chain builder (``register_chain``), which
refuses the combinations it does not support; then each wrapper wraps what came before.
Arguments may also come as keywords: ``build("qsgd", levels=16)`` is ``build("qsgd(levels=16)")``.
"""
from __future__ import annotations

import ast
import inspect
import math
from dataclasses import dataclass, field

# How compressed gradients are cut into messages, one word for every part that says it (the
# Trainer's ``compress_per`` and the simulator's frameworks): "bucket", the fused buffer (or a
# schedule's buckets) compressed as one tensor, as PyTorch DDP's communication hooks do; "tensor",
# each parameter tensor its own compressed message, as Horovod's compression does.
COMPRESS_PER = ("bucket", "tensor")


@dataclass(frozen=True)
class Spec:
    """One parsed spec: a normalised name with its literal positional and keyword arguments."""
    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def __str__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(parts)})" if parts else self.name


def parse(text: str) -> list[Spec]:
    """``"topk(0.01)+ef"`` -> [Spec("topk", (0.01,)), Spec("ef")]."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"expected a spec such as 'name' or 'name(arg, key=value)', got {text!r}")
    specs = []
    for part in _split_plus(text):
        head, paren, rest = part.strip().partition("(")
        try:  # a '-' in the name reads as '_' ("post-local-sgd"), not as a minus
            node = ast.parse(head.replace("-", "_") + paren + rest, mode="eval").body
        except SyntaxError as e:
            raise ValueError(f"cannot read spec {part.strip()!r}: {e.msg}") from None
        if isinstance(node, ast.Name):
            specs.append(Spec(_norm(node.id)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            try:
                if any(k.arg is None for k in node.keywords):  # f(**{...}) has no keyword name
                    raise ValueError
                args = tuple(_literal(a) for a in node.args)
                kwargs = {k.arg: _literal(k.value) for k in node.keywords}
            except (ValueError, TypeError):  # TypeError: e.g. an unhashable set element {[1]}
                raise ValueError(f"arguments of {part.strip()!r} must be numbers, strings or lists") from None
            specs.append(Spec(_norm(node.func.id), args, kwargs))
        else:
            raise ValueError(f"cannot read spec {part.strip()!r}; expected 'name' or 'name(arg, key=value)'")
    return specs


_SPECIAL = {"nan": math.nan, "inf": math.inf}  # read as numbers, so that the builder's range check names them


def _literal(node):
    """A literal argument; ``nan``, ``inf`` and ``-inf`` are read as the floats they name."""
    if isinstance(node, ast.Name) and node.id.lower() in _SPECIAL:
        return _SPECIAL[node.id.lower()]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Name) \
            and node.operand.id.lower() in _SPECIAL:
        return -_SPECIAL[node.operand.id.lower()]
    return ast.literal_eval(node)


def parse_one(text: str) -> Spec:
    """Parse a spec that must hold exactly one name (no '+'); ValueError otherwise."""
    specs = parse(text)
    if len(specs) != 1:
        raise ValueError(f"expected one spec, got {len(specs)} in {text!r}")
    return specs[0]


def _norm(name: str) -> str:
    return name.lower().replace("-", "_")


def _split_plus(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([" and 1 or (-1 if ch in ")]" else 0)
        if ch == "+" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


class Registry:
    """Names a dimension offers, with what builds each; planned names say which issue brings them."""

    def __init__(self, dimension: str):
        self.dimension = dimension
        self.builders: dict[str, object] = {}
        self.planned: dict[str, str] = {}
        self.wrappers: dict[str, object] = {}
        self.chain = None  # builds several parts joined by '+' (see register_chain)

    def register(self, name: str, builder) -> None:
        """Make ``name`` buildable: ``builder(*args, **kwargs)`` with the spec's arguments."""
        self.builders[name] = builder

    def register_wrapper(self, name: str, builder) -> None:
        """A name that only follows another after '+' ("topk(0.01)+ef"): built as
        ``builder(inner, *args, **kwargs)`` around what the specs before it built."""
        self.wrappers[name] = builder
        self.planned.pop(name, None)

    def register_chain(self, builder) -> None:
        """Let several registered names be joined by '+' before any wrapper
        ("topk(0.01)+qsgd(levels=16)+ef"): ``builder(*parts)`` gets what each name built, in
        order, and raises ValueError for a combination it does not support."""
        self.chain = builder

    def plan(self, names, where: str) -> None:
        """Mark ``names`` as planned but not implemented; building one says ``where`` (the issue)."""
        for n in names:
            self.planned[n] = where

    def names(self) -> list[str]:
        """The registered (buildable) names, sorted; wrappers and planned names are not listed."""
        return sorted(self.builders)

    def _available(self) -> str:
        wrapped = [f"+{w}" for w in sorted(self.wrappers)]
        return ", ".join(self.names() + wrapped) or "none yet"

    def _check(self, spec: Spec) -> None:
        if spec.name in self.builders or spec.name in self.wrappers:
            return
        if spec.name in self.planned:
            raise NotImplementedError(
                f"{self.dimension} {spec.name!r} is not implemented yet ({self.planned[spec.name]}); "
                f"available now: {self._available()}")
        planned = f" (planned: {', '.join(sorted(self.planned))})" if self.planned else ""
        raise ValueError(f"unknown {self.dimension} {spec.name!r}; valid: {self._available()}{planned}")

    def build(self, spec, **kwargs):
        """Build from a spec string or Spec; a joined spec ("a+b+ef") is checked name by name.
        Keyword arguments are arguments of a single name: ``build("qsgd", levels=16)``."""
        specs = parse(spec) if isinstance(spec, str) else [spec]
        if kwargs:
            specs = [self._with_keywords(specs, spec, kwargs)]
        for one in specs:
            self._check(one)
        if specs[0].name in self.wrappers:
            raise ValueError(f"{specs[0].name!r} wraps another {self.dimension}; write it after one, "
                             f"as in 'name+{specs[0].name}' (valid names: {self._available()})")
        n = next((i for i, s in enumerate(specs) if s.name in self.wrappers), len(specs))
        late = [s.name for s in specs[n:] if s.name not in self.wrappers]
        if late:
            raise ValueError(f"in {spec!r}, {late[0]!r} follows a wrapper; write wrappers last, as in "
                             f"'{'+'.join(s.name for s in specs if s.name not in self.wrappers)}+"
                             f"{'+'.join(s.name for s in specs if s.name in self.wrappers)}'")
        parts = [self._call(self.builders[one.name], one) for one in specs[:n]]
        if len(parts) > 1 and self.chain is None:
            raise NotImplementedError(f"combining {self.dimension}s ({spec!r}) is not implemented yet")
        built = self.chain(*parts) if len(parts) > 1 else parts[0]
        for one in specs[n:]:
            built = self._call(self.wrappers[one.name], one, built)
        return built

    def _with_keywords(self, specs: list, spec, kwargs: dict) -> Spec:
        if len(specs) != 1:
            raise ValueError(f"keyword arguments {sorted(kwargs)} belong to one {self.dimension} name, but {spec!r} "
                             f"joins {len(specs)}; write the arguments inside the spec, as in "
                             f"'topk(0.01)+ef'")
        one = specs[0]
        twice = sorted(set(one.kwargs) & set(kwargs))
        if twice:
            raise ValueError(f"{self.dimension} {str(one)!r} is given {', '.join(twice)} again as keyword(s)")
        return Spec(one.name, one.args, {**one.kwargs, **kwargs})

    def _call(self, builder, spec: Spec, *inner):
        try:
            return builder(*inner, *spec.args, **spec.kwargs)
        except TypeError as e:
            raise ValueError(f"bad arguments for {self.dimension} {str(spec)!r}: {e}; valid arguments: "
                             f"{arguments(builder, skip=len(inner))}") from None


def arguments(builder, skip: int = 0) -> str:
    """The arguments a builder takes, with their defaults: "levels=16, bucket=512, seed=0"
    (``skip``: leading positional ones filled in by the registry, such as a wrapper's inner)."""
    try:
        params = list(inspect.signature(builder).parameters.values())[skip:]
    except (TypeError, ValueError):  # a builtin without a signature
        return "see its documentation"
    shown = [p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in params
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return ", ".join(shown) or "none"
