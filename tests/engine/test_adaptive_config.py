"""AdaptiveConfig in place of the seven adaptive_* parameters (issue 20)."""

from __future__ import annotations

import numpy as np
import pytest

from astrid_airflow import AdaptiveConfig, ParameterError, astrid, make_synthetic


@pytest.fixture(scope="module")
def small():
    return make_synthetic(60, random_state=1)


def _run(table, **kw):
    d = astrid(table, target="class", n_search=8, n_test=30, random_state=3,
               progress=False, **kw).to_dict()
    d.pop("seconds"), d.pop("estimate", None), d.pop("cpu_seconds", None)
    return d


def test_config_and_the_old_keywords_give_the_same_run(small):
    config = AdaptiveConfig(risk=0.02, race_batch=4, delta_sd=None)
    a = _run(small, adaptive=config)
    b = _run(small, adaptive=True, adaptive_risk=0.02, adaptive_race_batch=4,
             adaptive_delta_sd=None)
    assert a == b and a["adaptive"]["risk"] == 0.02 and a["adaptive"]["delta_sd"] is None


def test_numpy_reals_are_accepted_like_alpha(small):
    assert AdaptiveConfig(risk=np.float32(0.01)).risk == pytest.approx(0.01)
    d = _run(small, adaptive=True, adaptive_risk=np.float32(0.01), alpha=np.float32(0.05))
    assert d["adaptive"]["risk"] == pytest.approx(0.01)


@pytest.mark.parametrize(("kw", "match"), [
    pytest.param({"risk": 1.5}, "adaptive_risk", id="risk"),
    pytest.param({"race_risk": 0}, "adaptive_race_risk", id="race_risk"),
    pytest.param({"delta": True}, "adaptive_delta", id="bool is not a number"),
    pytest.param({"delta_sd": float("inf")}, "adaptive_delta_sd", id="delta_sd"),
    pytest.param({"batch": 0}, "adaptive_batch", id="batch"),
])
def test_config_is_validated_on_construction(kw, match):
    with pytest.raises(ParameterError, match=match):
        AdaptiveConfig(**kw)


def test_unknown_keyword_and_bad_adaptive(small):
    with pytest.raises(TypeError, match="adaptive_rsk"):
        astrid(small, target="class", adaptive=True, adaptive_rsk=0.1)
    with pytest.raises(ParameterError, match="Invalid adaptive"):
        astrid(small, target="class", adaptive="yes")


def test_config_is_frozen_and_round_trips():
    c = AdaptiveConfig(verify=True)
    with pytest.raises(AttributeError):
        c.risk = 0.5
    assert AdaptiveConfig.from_dict(c.to_dict()) == c
