"""The ``rf`` preset's forest: randomForest's algorithm with little per-fit overhead.

ASTRID fits thousands of 500-tree forests on a few hundred rows. There the cost of
:class:`~sklearn.ensemble.RandomForestClassifier` is dominated by per-tree Python work
(cloning the tree estimator, ``get_params``, input and target validation, two
``RandomState`` seedings per tree: about 75 % of a fit on 500 rows × 4), not by growing
trees. :class:`RandomForest` grows every tree with scikit-learn's own Cython builder
(``DepthFirstTreeBuilder`` + ``BestSplitter`` + Gini, the code behind
``DecisionTreeClassifier``) and draws all bootstrap samples of a forest in one
vectorised call.

The algorithm is randomForest's defaults (Breiman 2001; R package ``randomForest``):
``n_estimators`` trees, each on a bootstrap sample of n rows drawn with replacement,
``mtry`` candidate attributes per split, grown to purity (``nodesize = 1``), Gini
splits; the forest predicts the class with the highest mean leaf class proportion
(scikit-learn's soft vote; randomForest votes with hard labels, which differs only in
leaves that hold several classes, i.e. rows with identical attributes and different
classes).

Backends (``backend=``), all the same algorithm and settings:

* ``"lean"``: the loop above; a test checks that each of its trees is the tree
  ``DecisionTreeClassifier`` grows from the same bootstrap weights and seed.
* ``"sklearn"``: :class:`~sklearn.ensemble.RandomForestClassifier` itself (reference).
* ``"onedal"``: scikit-learn-intelex's oneDAL forest; ``max_bins`` is raised to the
  number of rows so every distinct value is a split candidate, as in an exact forest,
  and it runs single-threaded (ASTRID parallelises over permutations instead).

The ``rf`` preset uses :func:`default_backend`: ``"onedal"`` where scikit-learn-intelex
is installed (a dependency on x86-64 Linux and Windows, the platforms it ships for),
``"lean"`` elsewhere; results and artefacts record which one ran. Why oneDAL: about twice
cheaper per fit than ``"lean"``, whose per-node sorts make it slower than R's
randomForest on one core on few attributes (docs/performance.md). The backends draw
different random numbers, so single fits differ; accuracies agree in distribution
(tested, and measured in docs/performance.md).
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from astrid_airflow._errors import ParameterError

BACKENDS = ("lean", "sklearn", "onedal")
_MAX_INT = np.iinfo(np.int32).max

try:  # private scikit-learn API (pinned by the lock); "lean" falls back without it
    from sklearn.tree._criterion import Gini
    from sklearn.tree._splitter import BestSplitter
    from sklearn.tree._tree import DepthFirstTreeBuilder, Tree

    _LEAN = True
except ImportError:  # pragma: no cover - depends on the installed scikit-learn
    _LEAN = False


@functools.cache
def onedal_available() -> bool:
    """True when scikit-learn-intelex is installed (the ``onedal`` backend).

    Looked up, not imported: the import is heavy and happens at the first fit.
    """
    return importlib.util.find_spec("sklearnex") is not None


def default_backend() -> str:
    """The ``rf`` preset's backend: ``"onedal"`` when it is installed, else ``"lean"``."""
    return "onedal" if onedal_available() else "lean"


@functools.cache
def quiet_onedal_logging() -> None:
    """Keep scikit-learn-intelex's per-call INFO lines out of the logs (once a process).

    sklearnex logs "running accelerated version on CPU" at INFO for every ``fit`` and
    ``predict_proba`` (on its own stderr handler and again through the root logger):
    thousands of lines per learn in a task log whose root is at INFO. Its logger is set
    to WARNING unless the user chose a level (``SKLEARNEX_VERBOSE`` or the logger's own
    level), so warnings and errors still show. Called in each process that fits.
    """
    import logging
    import os

    logger = logging.getLogger("sklearnex")
    if "SKLEARNEX_VERBOSE" not in os.environ and logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)


def grow_tree(X: np.ndarray, y2: np.ndarray, weight: np.ndarray, n_classes: np.ndarray,
              mtry: int, random_state: np.random.RandomState):
    """One fully grown Gini tree, exactly as ``DecisionTreeClassifier._fit`` grows it.

    ``X`` float32 (n, m); ``y2`` float64 class codes (n, 1); ``weight`` bootstrap counts.
    """
    splitter = BestSplitter(Gini(1, n_classes), mtry, 1, 0.0, random_state, None)
    tree = Tree(X.shape[1], n_classes, 1)
    DepthFirstTreeBuilder(splitter, 2, 1, 0.0, _MAX_INT, 0.0).build(tree, X, y2, weight, None)
    return tree


class RandomForest(ClassifierMixin, BaseEstimator):
    """Random forest of fully grown Gini trees on bootstrap samples (randomForest).

    Parameters
    ----------
    n_estimators : int, default=500
    max_features : int or "sqrt", default="sqrt"
        ``mtry``, attributes tried per split; "sqrt" is ``floor(sqrt(n_features))``.
    backend : {"lean", "sklearn", "onedal"}, default="lean"
    random_state : int or None
    """

    def __init__(self, n_estimators: int = 500, max_features: int | str = "sqrt",
                 backend: str = "lean", random_state: int | None = None):
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.backend = backend
        self.random_state = random_state

    def _mtry(self, n_features: int) -> int:
        if self.max_features == "sqrt":
            return max(1, int(np.sqrt(n_features)))
        return max(1, min(int(self.max_features), n_features))

    def fit(self, X, y):
        if self.backend not in BACKENDS:
            raise ParameterError(f"Unknown random forest backend {self.backend!r}. Must be "
                                 f"one of {list(BACKENDS)}.")
        X = np.ascontiguousarray(X, dtype=np.float32)
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        self.n_features_in_ = X.shape[1]
        self._delegate, self.trees_ = None, []
        if self.backend == "lean" and _LEAN:
            return self._fit_lean(X, codes)
        self._delegate = self._make_delegate(X.shape).fit(X, codes)
        return self

    def _fit_lean(self, X, codes):
        n, t = X.shape[0], int(self.n_estimators)
        rng = np.random.default_rng(self.random_state)
        # All bootstrap samples at once: counts[i, r] = times row r is drawn for tree i.
        draws = rng.integers(0, n, size=(t, n)) + (np.arange(t) * n)[:, None]
        counts = np.bincount(draws.ravel(), minlength=t * n).reshape(t, n).astype(np.float64)
        # One RandomState shared by the splitters: each draws its own seed from it.
        splitter_rs = np.random.RandomState(int(rng.integers(0, _MAX_INT)))
        y2 = np.ascontiguousarray(codes.reshape(-1, 1), dtype=np.float64)
        n_classes = np.array([len(self.classes_)], dtype=np.intp)
        mtry = self._mtry(X.shape[1])
        self.trees_ = [grow_tree(X, y2, counts[i], n_classes, mtry, splitter_rs)
                       for i in range(t)]
        return self

    def _make_delegate(self, shape):
        common = dict(n_estimators=int(self.n_estimators), max_features=self._mtry(shape[1]),
                      bootstrap=True, n_jobs=1, random_state=self.random_state)
        if self.backend == "onedal":
            try:
                from sklearnex.ensemble import RandomForestClassifier as DalForest
            except ImportError:
                raise ParameterError(
                    "The 'onedal' random forest backend needs scikit-learn-intelex "
                    "(pip install scikit-learn-intelex).") from None
            quiet_onedal_logging()
            return DalForest(max_bins=max(256, shape[0]), min_bin_size=1, **common)
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(**common)

    def predict_proba(self, X):
        X = np.ascontiguousarray(X, dtype=np.float32)
        if self._delegate is not None:
            return np.asarray(self._delegate.predict_proba(X), dtype=np.float64)
        k = len(self.classes_)
        proba = np.zeros((X.shape[0], k), dtype=np.float64)
        for tree in self.trees_:
            proba += tree.predict(X)[:, :k]
        return proba / len(self.trees_)

    def predict(self, X):
        return self.classes_.take(np.argmax(self.predict_proba(X), axis=1), axis=0)
