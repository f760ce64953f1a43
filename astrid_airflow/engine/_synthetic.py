"""The paper's running example (Sec. 5 and Fig. 1; ``make_synthetic_dataset`` in astrid-r)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from astrid_airflow._errors import ParameterError
from astrid_airflow._validation import check_positive_int, check_seed_sequence

# The running example is a demo table: two classes of at most a million rows (2,000,000
# rows, ~80 MB in memory, ~190 MB as CSV). A typo like ``--n-per-class 500000000`` would
# otherwise fill a disk; large benchmark tables come from ``make_planted``.
MAX_N_PER_CLASS = 1_000_000


def make_synthetic(n_per_class: int = 500, *, mean_gap: float = 0.6, correlation: float = 0.95,
                   random_state: object = None) -> pd.DataFrame:
    """Generate the synthetic dataset of the ASTRID paper.

    Two classes of ``n_per_class`` rows each, columns ``a1, a2, a3, a4, class``:

    * ``a1, a2`` bivariate normal, unit variances, correlation ``correlation``; in
      class 1 ``a2`` is negated. Each marginal is N(0, 1) in both classes, so the class
      shows only in the sign of the a1–a2 correlation (an interaction);
    * ``a3`` ~ N(+mean_gap, 1) in class 0 and N(−mean_gap, 1) in class 1;
    * ``a4`` ~ U(0, 1), independent of the class.

    The true grouping is {a1, a2}, {a3}, {a4}. Values match the R code in
    distribution only (different generators). ``n_per_class`` is at most
    :data:`MAX_N_PER_CLASS` (1,000,000; ``ParameterError`` above it).
    """
    n = check_positive_int(n_per_class, "n_per_class")
    if n > MAX_N_PER_CLASS:
        raise ParameterError(f"Invalid n_per_class: {n}. At most {MAX_N_PER_CLASS:,} rows "
                             "per class (the running example is a demo table).")
    rng = np.random.default_rng(check_seed_sequence(random_state))
    cov = np.array([[1.0, correlation], [correlation, 1.0]])
    a12 = rng.multivariate_normal([0.0, 0.0], cov, size=2 * n)
    a12[n:, 1] *= -1.0
    a3 = np.concatenate([rng.normal(mean_gap, 1.0, n), rng.normal(-mean_gap, 1.0, n)])
    a4 = rng.uniform(0.0, 1.0, 2 * n)
    return pd.DataFrame({"a1": a12[:, 0], "a2": a12[:, 1], "a3": a3, "a4": a4,
                         "class": np.repeat([0, 1], n)})


def make_planted(n_rows: int = 10_000, n_attributes: int = 50, *, n_pairs: int = 3,
                 correlation: float = 0.9, n_parity: int = 0, random_state: object = None
                 ) -> tuple[pd.DataFrame, list[list[str]]]:
    """A wide mixed table with planted interactions, for benchmarks at scale.

    Two balanced classes. Planted, each carrying class information only jointly:

    * ``n_pairs`` pairs: numeric pairs ``p{i}a, p{i}b`` bivariate normal with correlation
      ``+correlation`` in class 0 and ``-correlation`` in class 1 (the running example's
      a1, a2), and — the last pair — a categorical pair ``c0a, c0b`` of four levels,
      ``c0b = c0a`` in class 0 and ``c0a + 1 (mod 4)`` in class 1, 80 % of the time;
      every marginal is the same in both classes;
    * one triple ``t0a, t0b, t0c``: ``t0c = ±t0a·t0b + noise``, the sign by class, so
      every pair of the three has the same distribution in both classes;
    * two single signals ``s0``, ``s1`` (a class-dependent mean), independent of the rest;
    * ``n_parity`` pure parity triples ``q{i}a, q{i}b, q{i}c`` (default none): normal
      values whose signs multiply to the class's sign 90 % of the time, so every pair of
      the three is independent given the class and only the triple carries it;
    * noise columns up to ``n_attributes``: numeric and categorical, independent of
      everything.

    Returns the table (``class`` last) and the planted groups (pairs, the triple, then
    the parity triples).
    """
    n = check_positive_int(n_rows, "n_rows", minimum=8)
    n_parity = check_positive_int(n_parity, "n_parity", minimum=0)
    rng = np.random.default_rng(check_seed_sequence(random_state))
    y = np.arange(n) % 2
    sign = np.where(y == 0, 1.0, -1.0)
    cols: dict[str, np.ndarray] = {}
    groups: list[list[str]] = []
    for i in range(n_pairs - 1):
        a = rng.normal(size=n)
        b = correlation * sign * a + np.sqrt(1 - correlation ** 2) * rng.normal(size=n)
        cols[f"p{i}a"], cols[f"p{i}b"] = a, b
        groups.append([f"p{i}a", f"p{i}b"])
    if n_pairs:
        ca = rng.integers(0, 4, n)
        keep = rng.random(n) < 0.8
        cb = np.where(keep, (ca + y) % 4, rng.integers(0, 4, n))
        levels = np.array(["w", "x", "y", "z"])
        cols["c0a"], cols["c0b"] = levels[ca], levels[cb]
        groups.append(["c0a", "c0b"])
    ta, tb = rng.normal(size=n), rng.normal(size=n)
    cols["t0a"], cols["t0b"] = ta, tb
    cols["t0c"] = sign * ta * tb + 0.3 * rng.normal(size=n)
    groups.append(["t0a", "t0b", "t0c"])
    cols["s0"] = rng.normal(size=n) + 0.5 * sign
    cols["s1"] = rng.normal(size=n) - 0.3 * sign
    for i in range(n_parity):
        qa, qb = rng.normal(size=n), rng.normal(size=n)
        keep = np.where(rng.random(n) < 0.9, 1.0, -1.0)
        cols[f"q{i}a"], cols[f"q{i}b"] = qa, qb
        cols[f"q{i}c"] = sign * keep * np.sign(qa) * np.sign(qb) * np.abs(rng.normal(size=n))
        groups.append([f"q{i}a", f"q{i}b", f"q{i}c"])
    j = 0
    while len(cols) < n_attributes:
        cols[f"n{j}"] = rng.normal(size=n) if j % 3 else \
            np.array(["u", "v", "w"])[rng.integers(0, 3, n)]
        j += 1
    table = pd.DataFrame(cols)
    table["class"] = y
    return table, groups


# ``make_mixed_table``: a data platform's table of 30 attributes. Each categorical column
# is (name, number of levels, Zipf exponent, label prefix); the levels' frequencies fall
# as 1 / rank ** exponent, so a few levels hold most rows and the tail is thin.
_MIXED_CATEGORICAL = (
    ("region", 40, 1.1, "R"), ("channel", 6, 0.8, "CH"), ("product", 120, 1.05, "P"),
    ("is_member", 2, 1.0, ""), ("segment", 5, 0.7, "SEG"), ("device", 8, 1.2, "DEV"),
    ("language", 25, 1.5, "L"), ("payment_method", 7, 1.0, "PM"),
    ("occupation", 80, 0.9, "OCC"), ("merchant_category", 150, 1.1, "MCC"),
    ("plan", 3, 0.6, "PLAN"), ("postcode_area", 300, 1.0, "PC"))


def _zipf_probabilities(levels: int, exponent: float) -> np.ndarray:
    p = 1.0 / np.arange(1, levels + 1) ** exponent
    return p / p.sum()


def _polarity(p: np.ndarray) -> np.ndarray:
    """±1 per level, the two sides' total frequencies as equal as the levels allow
    (greedy, most frequent first): a sign that, alone, says nothing of the class."""
    side, mass = np.empty(len(p)), [0.0, 0.0]
    for i in np.argsort(-p, kind="stable"):
        j = int(mass[1] < mass[0])
        side[i], mass[j] = (1.0, -1.0)[j], mass[j] + p[i]
    return side


def _draw(rng: np.random.Generator, p: np.ndarray, n: int) -> np.ndarray:
    """``n`` level codes drawn with probabilities ``p`` (vectorised inverse CDF)."""
    cdf = np.cumsum(p)
    return np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"),
                      len(p) - 1)


def _labels(prefix: str, codes: np.ndarray, levels: int) -> np.ndarray:
    if levels == 2 and not prefix:
        names = np.array(["N", "Y"], dtype=object)
    else:
        width = len(str(levels - 1))
        names = np.array([f"{prefix}{i:0{width}d}" for i in range(levels)], dtype=object)
    return names[codes]


def _mixed_planted(rng: np.random.Generator, sign: np.ndarray, concordance: float
                   ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The planted columns: (numeric, categorical codes), each group carrying the class
    as an XOR of signs whose marginals are (nearly) the same in both classes."""
    n = len(sign)
    specs = {name: (levels, a) for name, levels, a, _ in _MIXED_CATEGORICAL}
    agree = np.where(rng.random((2, n)) < concordance, 1.0, -1.0)
    # amount x region: the sign of log(amount)'s deviation is the region's polarity times
    # the class's sign; zeros (no purchase) carry nothing
    p_region = _zipf_probabilities(*specs["region"])
    region = _draw(rng, p_region, n)
    z = np.abs(rng.normal(size=n)) * _polarity(p_region)[region] * sign * agree[0]
    amount = np.round(np.exp(3.5 + 1.2 * z), 2)
    amount[rng.random(n) < 0.08] = 0.0
    # tenure x utilisation: a Gaussian copula whose correlation sign is the class's
    a = rng.normal(size=n)
    b = 0.85 * sign * a + np.sqrt(1 - 0.85 ** 2) * rng.normal(size=n)
    tenure = np.floor(np.exp(2.8 + 0.9 * a)).clip(0, 480)
    utilisation = np.round(_normal_cdf(b), 4)
    # channel x product: the product's polarity is the channel's times the class's sign
    p_channel, p_product = (_zipf_probabilities(*specs[c]) for c in ("channel", "product"))
    channel = _draw(rng, p_channel, n)
    q = _polarity(p_product)
    plus, minus = (_draw(rng, np.where(q == s, p_product, 0.0), n) for s in (1.0, -1.0))
    want = _polarity(p_channel)[channel] * sign * agree[1]
    product = np.where(want > 0, plus, minus)
    numeric = {"amount": amount, "tenure_months": tenure.astype(np.int64),
               "utilisation": utilisation}
    return numeric, {"region": region, "channel": channel, "product": product}


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    from scipy.special import ndtr

    return ndtr(x)


def _mixed_noise(rng: np.random.Generator, sign: np.ndarray) -> dict[str, np.ndarray]:
    """The 15 other numeric columns: ages, amounts, counts and ratios; one single signal
    (``n_complaints``, a class-dependent rate), the rest independent of the class."""
    n = len(sign)

    def skewed(mu: float, sigma: float, zeros: float) -> np.ndarray:
        x = np.round(rng.lognormal(mu, sigma, n), 2)
        x[rng.random(n) < zeros] = 0.0
        return x

    age = np.clip(np.round(18 + rng.gamma(4.0, 6.5, n)), 18, 90).astype(np.int64)
    return {
        "age": age, "income": skewed(10.3, 0.6, 0.05), "balance": skewed(7.0, 1.5, 0.2),
        "credit_limit": np.round(rng.lognormal(8.0, 0.7, n), -2),
        "last_payment": skewed(4.5, 1.1, 0.15),
        "n_orders": rng.poisson(3.2, n), "n_returns": rng.poisson(0.4, n),
        "n_logins": rng.negative_binomial(2, 0.08, n),
        "days_since_last": rng.negative_binomial(1, 0.05, n),
        "n_complaints": rng.poisson(np.where(sign > 0, 0.25, 0.6)),
        "n_devices": 1 + rng.poisson(0.6, n),
        "discount_ratio": np.round(rng.beta(0.6, 4.0, n), 4),
        "share_online": np.round(rng.beta(2.0, 1.5, n), 4),
        "fraud_score": np.round(rng.beta(1.0, 12.0, n), 4),
        "completion_rate": np.round(1 - rng.beta(1.0, 9.0, n), 4),
    }


def make_mixed_table(n_rows: int, *, random_state: object = None
                     ) -> tuple[pd.DataFrame, list[list[str]]]:
    """A mixed-type table as a data platform holds it, with planted interactions.

    30 attributes and ``class`` (last): 18 numeric columns — ``age`` (integers 18–90),
    skewed amounts (lognormal, some zeros: ``amount``, ``income``, ``balance``, ...),
    counts (Poisson and negative binomial integers) and ratios in [0, 1] — and 12
    categorical columns of string labels with 2 to 300 levels of Zipf-like frequencies.
    The binary ``class`` (int, about 40 % ones) is planted in three groups, each carrying
    it (nearly) only jointly (every column's marginal is about the same in both classes;
    85 % of rows follow the rule):

    * ``amount`` × ``region`` (numeric × categorical): the sign of log(amount)'s
      deviation from its median is the region's polarity times the class's sign (the
      regions split into two polarities of equal total frequency);
    * ``tenure_months`` × ``utilisation`` (numeric pair): a Gaussian copula whose
      correlation is +0.85 in one class and −0.85 in the other;
    * ``channel`` × ``product`` (categorical pair): the product's polarity is the
      channel's times the class's sign.

    ``n_complaints`` is a single signal (a class-dependent Poisson rate); the other 23
    columns are independent of the class. Vectorised: a million rows in a few seconds.
    Returns the table and the planted groups (in the order above).
    """
    n = check_positive_int(n_rows, "n_rows", minimum=8)
    rng = np.random.default_rng(check_seed_sequence(random_state))
    y = (rng.random(n) < 0.4).astype(np.int64)
    sign = np.where(y == 0, 1.0, -1.0)
    numeric, planted_codes = _mixed_planted(rng, sign, concordance=0.85)
    numeric.update(_mixed_noise(rng, sign))
    cols: dict[str, np.ndarray] = {}
    for name, levels, exponent, prefix in _MIXED_CATEGORICAL:
        codes = planted_codes[name] if name in planted_codes else \
            _draw(rng, _zipf_probabilities(levels, exponent), n)
        cols[name] = _labels(prefix, codes, levels)
    table = pd.DataFrame({**numeric, **cols})
    table["class"] = y
    groups = [["amount", "region"], ["tenure_months", "utilisation"], ["channel", "product"]]
    return table, groups
