"""Problem 1: test whether a grouping explains the class-conditional structure.

Ojala & Garriga (2010) Test 2 generalised to any grouping, as in the ASTRID paper
(Sec. 3, Eq. 3): the statistic T(D) is the held-out score of a classifier trained on D;
T(D0) comes from one fit on the unpermuted training rows, T(D1..DR) from fits on R
GoldenEye permutations of them, and

    p = (1 + #{i : T(Di) >= T(D0)}) / (1 + R).

Under the null hypothesis (the class-conditional distribution factorises by the
grouping) the Di are exchangeable with D0, so p is a valid p-value. T(D0) is a single
fit, exactly like each T(Di): averaging it over several fits would break that.
"""

from __future__ import annotations

import time

import numpy as np

from astrid_airflow._errors import ParameterError
from astrid_airflow._validation import (
    check_alpha,
    check_n_jobs,
    check_positive_int,
    check_seed_sequence,
)

from ._classifiers import classifier_spec
from ._fits import Task, prepare_fit_data, run_tasks
from ._grouping import Grouping, as_grouping
from ._result import GroupingTestResult
from ._scoring import check_scoring
from ._sequential import plan, run_sequential
from ._split import prepare, stratified_split


def empirical_p_value(observed: float, null_scores: np.ndarray) -> float:
    """``(1 + #{null >= observed}) / (1 + R)``; ties count against the null (Eq. 3)."""
    null_scores = np.asarray(null_scores, dtype=float)
    # Scores are ratios of counts; the tolerance only absorbs float rounding.
    hits = int(np.count_nonzero(null_scores >= observed - 1e-12))
    return (1.0 + hits) / (1.0 + null_scores.size)


def test_grouping(
    data: object,
    *,
    target: str,
    grouping: Grouping | str | list,
    classifier: object = "svm",
    classifier_params: dict | None = None,
    n_permutations: int = 250,
    scoring: str = "accuracy",
    test_size: float = 0.5,
    random_state: object = None,
    n_jobs: int = 1,
    backend: str | None = None,
    progress: bool | None = None,
    adaptive: bool = False,
    alpha: float = 0.05,
    adaptive_risk: float = 0.01,
    adaptive_batch: int = 10,
) -> GroupingTestResult:
    """Test the null hypothesis that ``grouping`` factorises the data (Problem 1).

    Parameters
    ----------
    data : DataFrame or path
        The table (attributes plus the class column).
    target : str
        The class column.
    grouping : Grouping, ``"a,b;c"`` text or list of lists
        A partition of the attribute columns.
    classifier : {"svm", "rf", "nb", "hgb"} or scikit-learn classifier, default="svm"
    classifier_params : dict or None
        Parameters of the preset's model, or ``set_params`` names for a user pipeline.
    n_permutations : int, default=250
        R, the number of GoldenEye permutations.
    scoring : {"accuracy", "balanced_accuracy", "f1_macro"}, default="accuracy"
    test_size : float, default=0.5
        Fraction of each class held out for scoring (stratified split).
    random_state : None, int, SeedSequence or Generator
    n_jobs : int, default=1
        Parallel fits (joblib); results do not depend on it.
    backend : str or None
        joblib backend (None: joblib's default or an enclosing ``parallel_config``).
    progress : bool or None
        Progress bar/log lines; None shows a bar on a terminal only.
    adaptive : bool, default=False
        Sequential Monte Carlo p-value: the exact test's permutations, in order, drawn in
        batches until the decision at ``alpha`` is known; ``n_permutations`` is the budget.
    alpha : float, default=0.05
        Level of the adaptive test's decision.
    adaptive_risk : float, default=0.01
        Bound on the chance that the adaptive test decides unlike the exact test.
    adaptive_batch : int, default=10
        Permutations per look.

    Returns
    -------
    GroupingTestResult
        ``p_value``, ``accuracy`` (T(D0)), ``null_accuracies`` (the R values T(Di)).

    References
    ----------
    Henelius, Puolamäki, Ukkonen. Finding Statistically Significant Attribute
    Interactions. Eq. 3 and Definition 1. Ojala & Garriga, JMLR 11 (2010), Test 2.
    """
    start = time.perf_counter()
    n_permutations = check_positive_int(n_permutations, "n_permutations")
    scoring = check_scoring(scoring)
    n_jobs = check_n_jobs(n_jobs)
    alpha = check_alpha(alpha)
    adaptive_batch = check_positive_int(adaptive_batch, "adaptive_batch")
    if adaptive and not (isinstance(adaptive_risk, float) and 0.0 < adaptive_risk < 1.0):
        raise ParameterError(f"Invalid adaptive_risk: {adaptive_risk!r}. Must be a number "
                             "in (0, 1).")
    if not 0.0 < float(test_size) < 1.0:
        raise ParameterError(f"Invalid test_size: {test_size!r}. Must be in (0, 1).")
    root = check_seed_sequence(random_state)
    prep = prepare(data, target, min_rows_per_class=2)
    grouping = as_grouping(grouping).check_partition_of(prep.attributes)
    split_ss, base_ss, null_ss = root.spawn(3)
    train, test = stratified_split(prep.codes, 1.0 - float(test_size), split_ss)
    X = prep.table[prep.attributes]
    fit_data = prepare_fit_data(
        classifier, X.iloc[train], prep.codes[train],
        {"test": (X.iloc[test], prep.codes[test])},
        scoring=scoring, n_classes=len(prep.classes), params=classifier_params)
    groups = tuple(tuple(g) for g in grouping.indices(prep.attributes))
    run = dict(n_jobs=n_jobs, backend=backend, progress=progress, desc="grouping test")
    seeds = null_ss.spawn(n_permutations)
    record = None
    if adaptive:
        observed = float(run_tasks(fit_data, [Task("test", None, base_ss)], **run)[0])
        seq = plan(n_permutations, alpha, adaptive_batch, adaptive_risk)
        out = run_sequential(observed, lambda first, count: run_tasks(
            fit_data, [Task("test", groups, s) for s in seeds[first:first + count]], **run),
            seq)
        null, p_value = out.null_scores, out.p_value
        record = {"alpha": alpha, "risk": adaptive_risk, "risk_bound": seq.risk_bound,
                  "permutations": out.n_draws, "hits": out.hits, "stop": out.stop,
                  "rejected": out.rejected}
    else:
        tasks = [Task("test", None, base_ss)] + [Task("test", groups, s) for s in seeds]
        scores = run_tasks(fit_data, tasks, **run)
        observed, null = float(scores[0]), scores[1:]
        p_value = empirical_p_value(observed, null)
    return GroupingTestResult(
        grouping=grouping, p_value=p_value, accuracy=observed,
        null_accuracies=null, n_fits=1 + null.size, seconds=time.perf_counter() - start,
        scoring=scoring,
        params={"classifier": classifier_spec(classifier, classifier_params),
                "n_permutations": n_permutations,
                "test_size": float(test_size),
                "random_state": random_state if isinstance(random_state, int) else None,
                "n_train": int(train.size), "n_test": int(test.size),
                "adaptive": record})


# keep pytest from collecting the imported function: ``test_grouping`` is a public
# name (a contract), so it keeps the prefix pytest collects.
test_grouping.__test__ = False
