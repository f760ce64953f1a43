"""Classifier presets matching the paper's R defaults, and user-supplied classifiers.

The paper used e1071's ``svm`` and ``naiveBayes`` and ``randomForest`` at their default
settings. The presets reproduce those defaults in scikit-learn:

* ``svm``: RBF kernel, C = 1, gamma = 1 / (number of encoded input columns), numeric
  attributes standardised with the training mean and sd, categorical attributes one-hot
  encoded and not scaled (as e1071's formula interface does).
* ``rf``: 500 trees, ``max_features = floor(sqrt(m))`` over the m attributes,
  bootstrap samples, fully grown trees (randomForest's ``nodesize = 1``); categorical
  attributes integer-coded. The forest is ``_forest.RandomForest`` with
  ``_forest.default_backend()``: scikit-learn-intelex's oneDAL forest (``"onedal"``)
  where it is installed, else scikit-learn's tree builder without its per-tree overhead
  (``"lean"``); ``params={"backend": ...}`` selects one (``"sklearn"``:
  ``RandomForestClassifier``). :func:`classifier_spec` records the backend that ran.
* ``nb``: Gaussian likelihoods for numeric attributes and frequency tables for
  categorical ones, combined under the naive Bayes assumption.
* ``hgb`` (not in the paper; the preset for large tables): scikit-learn's
  ``HistGradientBoostingClassifier`` at its defaults (100 boosting iterations, 31
  leaves, 255 bins; early stopping on 10 % of the training rows above 10,000 rows),
  numeric attributes as they are, categorical attributes as integer codes with native
  categorical splits (codes of attributes with more than 255 categories are treated
  as ordered numbers; unseen categories, -1, go with missing values). One thread per
  fit like every preset (the fit runner's ``threadpool_limits``); deterministic for a
  seed, which comes from the fit's own ``SeedSequence`` and drives the early-stopping
  split and the binning subsample. When the pair screen has run (``_screen``: "auto"
  on tables of more than 40 attributes or 20,000 rows), every ``hgb`` fit is
  **factorised over the screen's blocks** (:class:`BlockwiseClassifier`): one ``hgb``
  on the blocks' attributes, each tree branch within one block, and one on the free
  attributes, their class log-probabilities summed — see that class for why.

Every preset is a two-step :class:`~sklearn.pipeline.Pipeline` ``encode → model`` that
accepts the raw attribute DataFrame; missing values are imputed inside the pipeline.
Any scikit-learn classifier may be passed instead: a Pipeline is used as it is, a bare
classifier gets the ``svm`` preset's encoding in front of it.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone, is_classifier
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.naive_bayes import CategoricalNB, GaussianNB
from sklearn.pipeline import Pipeline
from sklearn.svm import SVC

from astrid_airflow._errors import ParameterError

from ._encoding import TableEncoder
from ._forest import RandomForest, default_backend

PRESETS = ("svm", "rf", "nb", "hgb")
# HistGradientBoostingClassifier's native categorical splits take at most max_bins codes.
_HGB_MAX_CATEGORIES = 255


class E1071SVC(SVC):
    """``SVC`` whose ``gamma`` defaults to 1 / n_features, as e1071's ``svm``."""

    def __init__(self, C: float = 1.0, tol: float = 1e-3, cache_size: float = 200,
                 random_state: int | None = None):
        super().__init__(C=C, kernel="rbf", tol=tol, cache_size=cache_size,
                         random_state=random_state)

    def fit(self, X, y, sample_weight=None):
        self.gamma = 1.0 / max(1, np.asarray(X).shape[1])
        return super().fit(X, y, sample_weight=sample_weight)


class MixedNaiveBayes(ClassifierMixin, BaseEstimator):
    """Naive Bayes over integer-coded categorical and numeric columns.

    Expects the output of ``TableEncoder(numeric="impute", categorical="ordinal")``;
    ``categorical_mask`` says which columns are category codes (unseen codes, -1, add
    no evidence). Numeric columns get Gaussian likelihoods, categorical ones
    frequency tables with a tiny pseudo-count (e1071 uses none but floors zeros).
    """

    def __init__(self, categorical_mask: tuple[bool, ...] | None = None, alpha: float = 1e-3):
        self.categorical_mask = categorical_mask
        self.alpha = alpha

    def fit(self, X, y):
        X = np.asarray(X, dtype=float)
        mask = np.zeros(X.shape[1], bool) if self.categorical_mask is None else \
            np.asarray(self.categorical_mask, bool)
        self.classes_, y_codes = np.unique(y, return_inverse=True)
        self._num = np.flatnonzero(~mask)
        self._cat = np.flatnonzero(mask)
        self._gnb = GaussianNB().fit(X[:, self._num], y_codes) if self._num.size else None
        self._cnb = None
        if self._cat.size:
            codes = X[:, self._cat].astype(int)
            n_cats = [max(1, int(c.max()) + 1) for c in codes.T]
            self._cnb = CategoricalNB(alpha=self.alpha, min_categories=n_cats,
                                      force_alpha=True).fit(np.maximum(codes, 0), y_codes)
        counts = np.bincount(y_codes, minlength=len(self.classes_))
        self._log_prior = np.log(counts / counts.sum())
        return self

    def _joint_log_likelihood(self, X):
        X = np.asarray(X, dtype=float)
        jll = np.tile(self._log_prior, (X.shape[0], 1))
        if self._gnb is not None:
            # GaussianNB's joint log-likelihood includes its prior; ours is added once above.
            jll += self._gnb._joint_log_likelihood(X[:, self._num]) - np.log(
                self._gnb.class_prior_)
        if self._cnb is not None:
            codes = X[:, self._cat].astype(int)
            for j, table in enumerate(self._cnb.feature_log_prob_):
                known = (codes[:, j] >= 0) & (codes[:, j] < table.shape[1])
                jll[known] += table[:, codes[known, j]].T
        return jll

    def predict(self, X):
        return self.classes_[np.argmax(self._joint_log_likelihood(X), axis=1)]


def set_categorical(model, encoder: TableEncoder) -> None:
    """Tell a model which of a fitted ordinal encoder's columns are category codes."""
    params = model.get_params()
    if "categorical_mask" in params:
        model.set_params(categorical_mask=tuple(s[0] == "cat" for s in encoder.specs_))
    elif isinstance(model, HistGradientBoostingClassifier):
        mask = [s[0] == "cat" and len(s[1]) <= _HGB_MAX_CATEGORIES for s in encoder.specs_]
        model.set_params(categorical_features=mask if any(mask) else None)


class BlockwiseClassifier(ClassifierMixin, BaseEstimator):
    """A classifier factorised over the pair screen's blocks (``_screen``).

    ``blocks``: disjoint lists of column indices of the (encoded) matrix, each a set of
    attributes the screen found dependent; ``free``: the columns of the attributes that
    depend on none. Two clones of ``base`` are fitted: one on the blocks' columns with
    the interaction constraint that a tree branch uses the columns of one block only
    (``interaction_cst``; a base without that parameter gets one clone per block), one
    on the free columns. A row's class log-probability is the sum of the models' minus
    (parts − 1) times the log of the training class frequencies — Bayes' rule when the
    parts are independent given the class, which is what the screen found.

    Why: greedy trees find an interaction only after a split that gains nothing on its
    own, which among many attributes rarely falls on the right one; with the free
    attributes in a model of their own and each branch kept in its block, the zero-gain
    splits fall where the interaction is (measured in docs/engine.md).

    What it cannot learn: interactions *between* blocks, or between a block and the
    free attributes — the ones the screen says are absent; and a block attribute with a
    strong signal of its own takes the roots of the blocks' model first (boosting moves
    on once its gain is used up). The blocks' model runs without early stopping (all
    ``max_iter`` iterations). ``categorical_features`` masks of ``base`` (``hgb``)
    are cut to each model's columns, and the blocks' model takes its categorical
    columns first (``models_`` keeps each model's columns in the order fitted), because
    ``HistGradientBoostingClassifier`` reads ``interaction_cst`` in that order;
    ``random_state`` seeds the clones (drawn from it in order), so a fit is
    deterministic for a seed. ``X`` is a 2-D array.
    """

    def __init__(self, base=None, blocks=(), free=(), random_state=None):
        self.base = base
        self.blocks = blocks
        self.free = free
        self.random_state = random_state

    def _parts(self) -> list[tuple[np.ndarray, list[np.ndarray] | None]]:
        blocks = [np.asarray(b, dtype=np.intp) for b in self.blocks if len(b)]
        parts: list[tuple[np.ndarray, list[np.ndarray] | None]] = []
        if "interaction_cst" in self.base.get_params() and len(blocks) > 1:
            parts.append((np.concatenate(blocks), blocks))
        else:
            parts += [(b, None) for b in blocks]
        if len(self.free):
            parts.append((np.asarray(self.free, dtype=np.intp), None))
        return parts

    def _model(self, cols: np.ndarray, blocks: list[np.ndarray] | None, seed: int
               ) -> tuple[np.ndarray, object]:
        """An unfitted clone of ``base`` for the columns ``cols`` (reordered for the
        blocks' model, see below) and the columns it is to be fitted on."""
        model = clone(self.base)
        params = model.get_params()
        mask = params.get("categorical_features")
        cut = mask is not None and not isinstance(mask, str)
        cat = np.asarray(mask, dtype=bool)[cols] if cut else np.zeros(cols.size, bool)
        if blocks is not None:
            # HistGradientBoosting moves the categorical columns to the front before it
            # fits, and reads interaction_cst in that moved order (scikit-learn 1.9 remaps
            # monotonic_cst, not interaction_cst): with a categorical column after a
            # numeric one the constraints paired the wrong columns, so at 100,000 x 100
            # the blocks' model could learn c0a, c0b only. With the categorical columns
            # first both orders are the same, whichever scikit-learn does.
            order = np.argsort(~cat, kind="stable")
            cols, cat = cols[order], cat[order]
            block_of = np.repeat(np.arange(len(blocks)), [b.size for b in blocks])[order]
            model.set_params(interaction_cst=[np.flatnonzero(block_of == i).tolist()
                                              for i in range(len(blocks))])
            if "early_stopping" in params:
                # a pure interaction's first trees gain nothing on the validation rows:
                # early stopping (on above 10,000 rows) ended the blocks' model after
                # 10-14 iterations, before it had learned any block
                model.set_params(early_stopping=False)
        if cut:
            model.set_params(categorical_features=[bool(v) for v in cat] if cat.any()
                             else None)
        if "random_state" in params and self.random_state is not None:
            model.set_params(random_state=seed)
        return cols, model

    def fit(self, X, y):
        y = np.asarray(y)
        self.classes_, counts = np.unique(y, return_counts=True)
        self.log_prior_ = np.log(counts / counts.sum())
        parts = self._parts()
        seeds = np.random.default_rng(self.random_state).integers(0, 2**31 - 1, len(parts))
        self.models_ = []
        for (cols, blocks), seed in zip(parts, seeds):
            cols, model = self._model(cols, blocks, int(seed))
            self.models_.append((cols, model.fit(X[:, cols], y)))
        return self

    def predict_log_proba(self, X):
        joint = np.tile(-(len(self.models_) - 1) * self.log_prior_, (X.shape[0], 1))
        for cols, model in self.models_:
            proba = np.zeros((X.shape[0], self.classes_.size))
            # a part's model knows the classes of the whole training set (same y)
            proba[:, np.searchsorted(self.classes_, model.classes_)] = \
                model.predict_proba(X[:, cols])
            joint += np.log(np.clip(proba, 1e-12, None))
        return joint - np.logaddexp.reduce(joint, axis=1, keepdims=True)

    def predict_proba(self, X):
        return np.exp(self.predict_log_proba(X))

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_log_proba(X), axis=1)]


class _CategoricalAwareNB(Pipeline):
    """Pipeline that tells its model which encoded columns are categorical."""

    def fit(self, X, y=None, **params):
        encoder = self.steps[0][1]
        encoder.fit(X)
        set_categorical(self.steps[-1][1], encoder)
        return super().fit(X, y, **params)


def make_classifier(spec: object = "svm", *, random_state: int | None = None,
                    n_attributes: int | None = None, params: dict | None = None) -> Pipeline:
    """Return an unfitted classifier pipeline for a preset name or an estimator.

    Parameters
    ----------
    spec : {"svm", "rf", "nb", "hgb"} or scikit-learn classifier
        A preset name, a ``Pipeline`` (used as is, fed the raw attribute DataFrame), or a
        bare classifier (the ``svm`` preset's encoding is put in front of it).
    random_state : int or None
        Seed for classifiers that draw random numbers (the ``rf`` and ``hgb`` presets).
    n_attributes : int or None
        Number of attributes m, used by ``rf`` for ``max_features = floor(sqrt(m))``;
        when None, scikit-learn's ``"sqrt"`` over the encoded columns is used (the same
        thing, as ``rf`` encodes one column per attribute).
    params : dict or None
        Parameters set on the model step of a preset (e.g. ``{"n_estimators": 100}``)
        or on a user pipeline (``set_params`` names).
    """
    pipeline = _make(spec, random_state, n_attributes)
    if params:
        target = pipeline.named_steps["model"] if isinstance(spec, str) else pipeline
        try:
            target.set_params(**params)
        except ValueError as exc:
            raise ParameterError(f"Invalid classifier parameters {params!r}: {exc}") from None
    return pipeline


def _make(spec: object, random_state: int | None, n_attributes: int | None) -> Pipeline:
    if isinstance(spec, str):
        if spec == "svm":
            return Pipeline([("encode", TableEncoder("scale", "onehot")),
                             ("model", E1071SVC(random_state=random_state))])
        if spec == "rf":
            max_features = "sqrt" if n_attributes is None else \
                max(1, int(np.floor(np.sqrt(n_attributes))))
            model = RandomForest(n_estimators=500, max_features=max_features,
                                 backend=default_backend(), random_state=random_state)
            return Pipeline([("encode", TableEncoder("impute", "ordinal")), ("model", model)])
        if spec == "nb":
            return _CategoricalAwareNB([("encode", TableEncoder("impute", "ordinal")),
                                        ("model", MixedNaiveBayes())])
        if spec == "hgb":
            return _CategoricalAwareNB([("encode", TableEncoder("impute", "ordinal")),
                                        ("model", HistGradientBoostingClassifier(
                                            random_state=random_state))])
        raise ParameterError(f"Unknown classifier {spec!r}. Must be one of {list(PRESETS)} "
                             "or a scikit-learn classifier.")
    if isinstance(spec, Pipeline):
        return set_random_state(clone(spec), random_state)
    if is_classifier(spec) or (hasattr(spec, "fit") and hasattr(spec, "predict")):
        return set_random_state(
            Pipeline([("encode", TableEncoder("scale", "onehot")), ("model", clone(spec))]),
            random_state)
    raise ParameterError(f"Invalid classifier {spec!r}: expected one of {list(PRESETS)} or an "
                         "object with fit and predict.")


def set_random_state(estimator, random_state: int | None):
    """Set every ``random_state`` parameter of ``estimator`` (and its steps)."""
    if random_state is None:
        return estimator
    params = {k: random_state for k in estimator.get_params(deep=True)
              if k == "random_state" or k.endswith("__random_state")}
    if params:
        estimator.set_params(**params)
    return estimator


def classifier_spec(spec: object, params: dict | None = None) -> dict:
    """A JSON-able description of a classifier for results and artefacts."""
    out: dict = {"preset": spec} if isinstance(spec, str) else \
        {"preset": None, "estimator": repr(spec)}
    if params:
        out["params"] = {k: v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)
                         for k, v in params.items()}
    if spec == "rf":  # the forest that ran: the default depends on the installed packages
        out["backend"] = str((params or {}).get("backend", default_backend()))
    return out
