"""``_check_*`` helpers used at the public boundary, with one message style."""

from __future__ import annotations

import math
import numbers

import numpy as np

from astrid_airflow._errors import ParameterError

#: Width of every seed the library draws or reports: 63 bits, so a seed survives every
#: JSON/XCom/SQLite round trip as an integer (docs/engine.md, "Seeds").
SEED_BITS = 63


def fresh_seed() -> int:
    """A new seed from OS entropy, ``0 <= seed < 2**63``, to be recorded and replayed.

    The one place a seed is drawn when the caller gave none (CLI ``--seed``, the gate's
    and the risk report's ``random_state=None``).
    """
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> (64 - SEED_BITS))


def check_positive_int(value: object, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int, or raise ``ParameterError``.

    >>> check_positive_int(0, "n_permutations")
    Traceback (most recent call last):
    ...
    astrid_airflow._errors.ParameterError: Invalid n_permutations: 0. Must be an integer >= 1.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(f"Invalid {name}: {value!r}. Must be an integer >= {minimum}.")
    return int(value)


#: Most attacks an attack-based measure may ask for (per attack and side). The search
#: for singling-out predicates tries up to 100 per attack, so this bounds its memory
#: and time (anonymeter's default is 2,000; the gate uses 500).
MAX_ATTACKS = 100_000


def check_attack_count(value: object, name: str = "n_attacks") -> int:
    """Return ``value`` as an int in ``[1, MAX_ATTACKS]``, or raise ``ParameterError``.

    >>> check_attack_count(100_000_000)
    Traceback (most recent call last):
    ...
    astrid_airflow._errors.ParameterError: Invalid n_attacks: 100000000. At most 100,000.
    """
    n = check_positive_int(value, name)
    if n > MAX_ATTACKS:
        # a 95 % interval is already about +-0.01 wide at 10,000 attacks
        raise ParameterError(f"Invalid {name}: {n}. At most {MAX_ATTACKS:,}.")
    return n


def check_fraction(value: object, name: str, *, zero: bool = False) -> float:
    """Return ``value`` as a float in (0, 1) (``[0, 1)`` with ``zero=True``).

    Any real number is accepted (``numpy.float32(0.05)`` like ``0.05``); bools are not.

    >>> check_fraction(1.5, "alpha")
    Traceback (most recent call last):
    ...
    astrid_airflow._errors.ParameterError: Invalid alpha: 1.5. Must be a number in (0, 1).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not (0.0 <= value < 1.0 if zero else 0.0 < value < 1.0):
        raise ParameterError(f"Invalid {name}: {value!r}. Must be a number in (0, 1).")
    return float(value)


def check_nonnegative(value: object, name: str) -> float:
    """Return ``value`` as a finite float >= 0 (any real number; not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not 0.0 <= value < math.inf:
        raise ParameterError(f"Invalid {name}: {value!r}. Must be a finite number >= 0.")
    return float(value)


def check_alpha(alpha: object) -> float:
    """Return ``alpha`` as a float in the open interval (0, 1)."""
    return check_fraction(alpha, "alpha")


def check_n_jobs(n_jobs: object) -> int:
    """Return ``n_jobs`` as a non-zero int (joblib semantics: -1 means all cores)."""
    if (
        isinstance(n_jobs, bool)
        or not isinstance(n_jobs, numbers.Integral)
        or n_jobs == 0
        or n_jobs < -1
    ):
        raise ParameterError(f"Invalid n_jobs: {n_jobs!r}. Must be a positive integer or -1.")
    return int(n_jobs)


def check_seed_sequence(random_state: object) -> np.random.SeedSequence:
    """Turn a ``random_state`` into the root ``SeedSequence`` of a run.

    Accepts ``None`` (fresh entropy), a non-negative int, a ``SeedSequence`` or a
    ``numpy.random.Generator`` (one 63-bit seed is drawn from it).
    """
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(0, 2**SEED_BITS - 1)))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ParameterError(f"Invalid random_state: {random_state}. Must be >= 0.")
        return np.random.SeedSequence(int(random_state))
    raise ParameterError(
        f"Invalid random_state: {random_state!r}. Must be None, a non-negative int, "
        "a numpy SeedSequence or a numpy Generator."
    )


def dataclass_from_dict(cls: type, data: object, what: str) -> object:
    """``cls(**data)`` for a settings dataclass; a non-mapping or unknown keys are a
    ``ParameterError`` naming ``what`` (e.g. ``"gate policy"``)."""
    from collections.abc import Mapping
    from dataclasses import fields

    if not isinstance(data, Mapping):
        raise ParameterError(f"Invalid {what}: expected an object, got "
                             f"{type(data).__name__}.")
    known = {f.name for f in fields(cls)}
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise ParameterError(f"Invalid {what}: unknown key(s) {unknown}; known: "
                             f"{sorted(known)}.")
    return cls(**dict(data))
