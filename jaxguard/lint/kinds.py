"""What kind of value a name holds at a point: a JAX array, a numpy array, a list, a Ref...

Tracked in source order during the rule traversal (the latest assignment wins), so that
`x = np.asarray(x); x[0] = 1` is a numpy update and `x = jnp.zeros(3); x[0] = 1` is not.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from jaxguard.lint.facts import all_params, positional
from jaxguard.lint.jaxapi import ARRAY_RETURNING_METHODS, METADATA_CALLS

if TYPE_CHECKING:
    from jaxguard.lint.engine import RuleContext
    from jaxguard.lint.facts import Scope

JAX = "jax"  # a jax.Array (or a tracer of one)
NUMPY = "numpy"
LIST = "list"
DICT = "dict"
SET = "set"
REF = "ref"  # jax.new_ref: mutable, `r[0] = 1` is legal

JAX_ARRAY_MODULES = ("jax.numpy.", "jax.random.", "jax.nn.", "jax.lax.", "jax.scipy.")
# Functions in those modules that do not return an array.
NOT_ARRAYS = METADATA_CALLS | frozenset(
    {
        "jax.numpy.save", "jax.numpy.savez", "jax.numpy.load", "jax.numpy.printoptions", "jax.numpy.set_printoptions",
        "jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.cond", "jax.lax.switch",
        "jax.lax.map",
        # lists and tuples of arrays: `parts[i] -= 1` changes the list, not an array
        "jax.numpy.split", "jax.numpy.array_split", "jax.numpy.hsplit", "jax.numpy.vsplit", "jax.numpy.dsplit",
        "jax.numpy.meshgrid", "jax.numpy.broadcast_arrays", "jax.numpy.unstack", "jax.numpy.nonzero",
        "jax.numpy.unravel_index", "jax.numpy.divmod", "jax.numpy.frexp", "jax.numpy.modf", "jax.numpy.histogram",
        "jax.numpy.histogram2d", "jax.numpy.histogramdd", "jax.numpy.triu_indices", "jax.numpy.tril_indices",
        "jax.numpy.diag_indices", "jax.numpy.linalg.eigh", "jax.numpy.linalg.eig", "jax.numpy.linalg.qr",
        "jax.numpy.linalg.svd", "jax.numpy.linalg.slogdet", "jax.lax.top_k",
    }
)
# NumPy's functions of the same names, and others that return no array (a dtype, a flag, a
# generator, a context manager).
NUMPY_NOT_ARRAYS = frozenset(
    {name.replace("jax.numpy.", "numpy.") for name in NOT_ARRAYS if name.startswith("jax.numpy.")} - {"numpy.load"}
) | {
    "numpy.isscalar", "numpy.iscomplexobj", "numpy.isrealobj", "numpy.array_equal", "numpy.array_equiv",
    "numpy.allclose", "numpy.errstate", "numpy.get_printoptions", "numpy.broadcast_shapes", "numpy.ndindex",
    "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator", "numpy.random.seed",
    "numpy.random.get_state", "numpy.random.set_state", "numpy.min_scalar_type", "numpy.obj2sctype",
}
ARRAY_FUNCTIONS = frozenset({"jax.device_put", "jax.numpy.asarray", "jax.numpy.array"})
REF_FUNCTIONS = frozenset({"jax.new_ref", "jax.ref.new_ref", "jax.experimental.mutable_array"})
AT_METHODS = frozenset(
    {"set", "add", "subtract", "multiply", "divide", "power", "min", "max", "apply", "get"}
)
ARRAY_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})
# NumPy functions that reduce over every axis unless given one: a NumPy scalar, not an array.
NUMPY_REDUCTIONS = frozenset(
    {
        "sum", "prod", "max", "min", "amax", "amin", "mean", "std", "var", "median", "all", "any",
        "argmax", "argmin", "count_nonzero", "ptp", "nansum", "nanprod", "nanmax", "nanmin", "nanmean",
    }
)
# NumPy's elementwise math: given numbers (no array), a NumPy scalar.
NUMPY_ELEMENTWISE = frozenset(
    {
        "power", "sqrt", "cbrt", "square", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "abs",
        "absolute", "fabs", "floor", "ceil", "rint", "trunc", "sign", "sin", "cos", "tan", "arcsin", "arccos",
        "arctan", "arctan2", "sinh", "cosh", "tanh", "hypot", "maximum", "minimum", "fmax", "fmin", "mod",
        "floor_divide", "true_divide", "divide", "multiply", "add", "subtract", "reciprocal", "deg2rad", "rad2deg",
    }
)
NUMPY_SCALAR_TYPES = frozenset(
    {
        "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "bool_", "complex64", "complex128", "intp",
    }
)
REF_NAME = re.compile(r"(^|_)refs?$")

_ANNOTATIONS = {
    "jax.Array": JAX,
    "jax.numpy.ndarray": JAX,
    "jax.typing.ArrayLike": None,
    "numpy.ndarray": NUMPY,
    "builtins.list": LIST,
    "builtins.dict": DICT,
    "typing.List": LIST,
    "typing.Dict": DICT,
}


BINDING_NODES = frozenset({cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.WithItem})


# Methods of dicts and lists that no array has: a traced argument they are called on is a
# container of the pytree (`for k, v in txs.items(): ... txs[k] = v`), its items settable.
CONTAINER_METHODS = frozenset(
    {"items", "keys", "values", "get", "setdefault", "update", "pop", "popitem", "append", "extend", "insert"}
)


def _used_as_containers(function) -> set[str]:
    """The function's parameters it calls a dict or list method on."""
    return {
        call.func.value.value
        for call in function.calls
        if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name)
        and call.func.attr.value in CONTAINER_METHODS and call.func.value.value in function.params
    }


class KindTracker:
    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx
        self.frames: list[tuple[Scope, dict[str, str | None]]] = []
        self.branches: list[list] = []  # per enclosing `if`: [kinds before it, kinds after its body]

    # scope changes --------------------------------------------------------------
    def enter(self, scope: Scope) -> None:
        frame: dict[str, str | None] = {}
        function = scope.function
        if function is not None:
            for param in function.params:
                # Pallas convention: kernel parameters are Refs (`x_ref`, `o_ref`, ...)
                frame[param] = REF if function.ref_params or REF_NAME.search(param) else None
            containers = _used_as_containers(function)
            for param in function.traced_params - {p for p, k in frame.items() if k == REF} - containers:
                frame[param] = JAX
            node = function.node
            for param in all_params(node.params):
                # A Pallas Ref is often annotated as an array (`o_ref: jax.Array`): it stays a Ref.
                if param.annotation is not None and frame.get(param.name.value) != REF:
                    kind = self._annotation_kind(param.annotation.annotation, scope)
                    if kind is not None or param.name.value not in function.traced_params:
                        frame[param.name.value] = kind
                    elif self._settable_class(param.annotation.annotation, scope):
                        frame[param.name.value] = None  # a pytree class of its own, items settable
        self.frames.append((scope, frame))

    def leave(self, scope: Scope) -> None:
        self.frames.pop()

    # `if` arms: the `else` arm starts from what held before the `if`, not from what the
    # other arm bound (`if use_jax: d = jax.nn.relu(d)` / `else: d[d < 0] = 0` on NumPy);
    # after the `if`, a name has the kind of the path that rebinds it.
    def begin_branches(self) -> None:
        self.branches.append([self._frame_copy(), None])

    def begin_else(self) -> None:
        branch = self.branches[-1]
        branch[1] = self._frame_copy()
        if self.frames:
            self.frames[-1] = (self.frames[-1][0], dict(branch[0]))

    def end_branches(self) -> None:
        before, after_body = self.branches.pop()
        if not self.frames:
            return
        other = self.frames[-1][1]
        if after_body is None:  # no `else`: the other path skips the body
            after_body, other = other, before
        joined = {name: _join(after_body.get(name), other.get(name), before.get(name)) for name in {*after_body, *other}}
        self.frames[-1] = (self.frames[-1][0], joined)

    def _frame_copy(self) -> dict[str, str | None]:
        return dict(self.frames[-1][1]) if self.frames else {}

    def after(self, node: cst.CSTNode) -> None:
        """Update kinds once a statement that binds names has been visited."""
        if type(node) not in BINDING_NODES:
            return
        if isinstance(node, cst.Assign):
            kind = self.kind_of(node.value)
            for target in node.targets:
                self._bind(target.target, kind)
        elif isinstance(node, cst.AnnAssign):
            kind = self.kind_of(node.value) if node.value is not None else None
            if kind is None:
                kind = self._annotation_kind(node.annotation.annotation, self.ctx.scope)
            self._bind(node.target, kind)
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            if self.kind_of(node.target) != JAX and self.kind_of(node.value) == JAX:
                self._bind(node.target, JAX)
        elif isinstance(node, cst.For):
            self._bind(node.target, None)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            self._bind(node.asname.name, None)

    def _bind(self, target: cst.BaseExpression, kind: str | None) -> None:
        if not self.frames:
            return
        frame = self.frames[-1][1]
        if isinstance(target, cst.Name):
            frame[target.value] = kind
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, None)

    def _settable_class(self, annotation: cst.BaseExpression, scope: Scope) -> bool:
        """A class of this module or project that defines `__setitem__` (a double-double
        pytree that updates through `.at[].set`): `x[i] = v` on it is its own method."""
        facts = self.ctx.facts
        if isinstance(annotation, cst.Name):
            owner = scope.lookup(annotation.value)
            if owner is not None and annotation.value in owner.classes:
                class_scope = facts.scopes.get(owner.classes[annotation.value])
                return class_scope is not None and "__setitem__" in class_scope.defs
        name = facts.qualname(annotation, scope)
        return bool(name) and facts.project is not None and facts.project.absolute(name) in facts.project.settable_classes

    def _annotation_kind(self, annotation: cst.BaseExpression, scope: Scope) -> str | None:
        if isinstance(annotation, cst.Subscript):
            annotation = annotation.value
        name = self.ctx.facts.qualname(annotation, scope)
        return _ANNOTATIONS.get(name or "")

    # queries ----------------------------------------------------------------------
    def name_kind(self, name: str) -> str | None:
        scope = self.ctx.scope
        owner = scope.lookup(name)
        for frame_scope, frame in reversed(self.frames):
            if frame_scope is owner or (owner is None and frame_scope.kind == "module"):
                return frame.get(name)
        return None

    def kind_of(self, node: cst.BaseExpression | None) -> str | None:
        if node is None:
            return None
        if isinstance(node, cst.Name):
            return self.name_kind(node.value)
        if isinstance(node, (cst.List, cst.ListComp)):
            return LIST
        if isinstance(node, (cst.Dict, cst.DictComp)):
            return DICT
        if isinstance(node, (cst.Set, cst.SetComp)):
            return SET
        if isinstance(node, cst.Call):
            return self._call_kind(node)
        if isinstance(node, cst.Subscript):
            return JAX if self.kind_of(node.value) == JAX else None
        if isinstance(node, cst.Attribute) and node.attr.value in ARRAY_ATTRIBUTES:
            return JAX if self.kind_of(node.value) == JAX else None
        if isinstance(node, cst.BinaryOperation):
            sides = (self.kind_of(node.left), self.kind_of(node.right))
            return JAX if JAX in sides else (NUMPY if NUMPY in sides else None)
        if isinstance(node, cst.UnaryOperation):
            return self.kind_of(node.expression)
        return None

    def _call_kind(self, node: cst.Call) -> str | None:
        func = node.func
        name = self.ctx.qualname(func)
        if name is not None:
            if name in REF_FUNCTIONS:
                return REF
            made = array_made_by(name)
            if made == NUMPY and (_numpy_scalar(name, node) or self._elementwise_on_numbers(name, node)):
                return None
            if made is not None:
                return made
            builtin_kind = {"builtins.list": LIST, "builtins.dict": DICT, "builtins.set": SET}.get(name)
            if builtin_kind is not None:
                return builtin_kind
        updated = at_update_base(node)
        if updated is not None:
            return self.kind_of(updated)
        if isinstance(func, cst.Attribute) and func.attr.value in ARRAY_RETURNING_METHODS and self.kind_of(func.value) == JAX:
            return JAX
        return None

    def _elementwise_on_numbers(self, name: str, call: cst.Call) -> bool:
        """`np.power(n_dims, -0.25)` on no array (numbers, names of no known array kind): a
        NumPy scalar, not an array."""
        module, _, function = name.rpartition(".")
        return module == "numpy" and function in NUMPY_ELEMENTWISE and all(
            not arg.star and self.kind_of(arg.value) is None and not isinstance(arg.value, (cst.List, cst.Tuple))
            for arg in call.args
        )


def array_made_by(name: str) -> str | None:
    """JAX or NUMPY if the function of qualified `name` returns an array of that kind."""
    if name in ARRAY_FUNCTIONS or (name.startswith(JAX_ARRAY_MODULES) and name not in NOT_ARRAYS):
        return JAX
    if name.startswith("numpy.") and name not in NUMPY_NOT_ARRAYS and not name.startswith("numpy.testing."):
        return NUMPY
    return None


def _join(a: str | None, b: str | None, before: str | None) -> str | None:
    """The kind after two paths that end with `a` and `b`: what they agree on, else what the
    path that changed it made of it (the other kept `before`); None if both changed it."""
    if a == b or b == before:
        return a
    return b if a == before else None


def _numpy_scalar(name: str, call: cst.Call) -> bool:
    """`np.prod(dims)`, `np.float32(x)`: a NumPy scalar (hashable), not an array."""
    module, _, function = name.rpartition(".")
    if module != "numpy":
        return False
    if function in NUMPY_SCALAR_TYPES:
        return True
    return function in NUMPY_REDUCTIONS and len(positional(call)) == 1 and not any(
        arg.keyword is not None and arg.keyword.value in ("axis", "keepdims", "out") for arg in call.args
    )


def at_update_base(call: cst.Call, methods: frozenset[str] = AT_METHODS) -> cst.BaseExpression | None:
    """`x` in `x.at[i].set(v)` (or another `.at[]` method in `methods`); None for other calls."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in methods:
        return None
    receiver = func.value
    if isinstance(receiver, cst.Subscript) and isinstance(receiver.value, cst.Attribute) and receiver.value.attr.value == "at":
        return receiver.value.value
    return None
