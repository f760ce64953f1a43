"""The gate's costly figures computed once per module for each distinct set of inputs.

A gate run spends nearly all its time on two figures that do not depend on the
surrogate it judges: the attacks on a shadow release of the original
(``privacy.shadow_attacks``) and the utility refits (``release.surrogate_utility``),
each a deterministic function of the original, the artefact (or grouping), the policy's
settings and the seed. Modules that judge many surrogates of one original use
the module fixture :func:`shared_gate_work`: both functions are memoised,
keyed on the pickled bytes of every argument (equal bytes, equal inputs; a miss only
recomputes), and each call gets its own deep copy. The integrity and disclosure checks,
which read the surrogate, run in every gate as before. A test about reproducibility
recomputes inside :meth:`GateWork.recomputing`.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest

#: (module, name) of the memoised functions, where the gate imports them from.
MEMOISED = (("astrid_airflow.privacy", "shadow_attacks"),
            ("astrid_airflow.release", "surrogate_utility"))


class GateWork:
    """Memo of the gate's surrogate-independent figures; counts real computations."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}
        self._recompute = False
        self.computed: list[str] = []  # the name of each function call really run
        self.reused: list[str] = []

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def memoised(*args: Any, **kwargs: Any) -> Any:
            try:
                key = hashlib.sha256(pickle.dumps((name, args, sorted(kwargs.items())))
                                     ).hexdigest()
            except Exception:  # an argument that does not pickle: no memo
                key = None
            if key is None or self._recompute:
                self.computed.append(name)
                return fn(*args, **kwargs)
            if key in self._cache:
                self.reused.append(name)
            else:
                self.computed.append(name)
                self._cache[key] = fn(*args, **kwargs)
            return copy.deepcopy(self._cache[key])

        memoised.__wrapped__ = fn
        return memoised

    @contextlib.contextmanager
    def recomputing(self) -> Iterator[None]:
        """Every call in the block runs the real function (and is not stored)."""
        self._recompute = True
        try:
            yield
        finally:
            self._recompute = False


@contextlib.contextmanager
def installed_gate_work() -> Iterator[GateWork]:
    """A fresh :class:`GateWork` in place of the memoised functions while the block
    runs."""
    import importlib

    work = GateWork()
    with pytest.MonkeyPatch.context() as mp:
        for module, name in MEMOISED:
            target = importlib.import_module(module)
            mp.setattr(target, name, work.wrap(name, getattr(target, name)))
        yield work


@pytest.fixture(scope="module")
def shared_gate_work() -> Iterator[GateWork]:
    """The gate's shadow attacks and utility refits, memoised for the module that
    imports this fixture."""
    with installed_gate_work() as work:
        yield work
