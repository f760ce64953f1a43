"""Generated tables of people for the benchmarks: no real person's data, the shapes and
dependencies of the tables privacy officers publish.

* :func:`people_table`: census-like, 14 attributes and an income class;
* :func:`clinic_table`: clinical, a patient id, age, sex and year of sampling (what an
  acquaintance may know), serum free light chains and creatinine, and death as the
  class, with the dependencies of such cohorts (age drives the markers and death).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def people_table(n: int = 5_000, seed: int = 0) -> tuple[pd.DataFrame, str]:
    """A generated table of people: 13 attributes and an income class, with the
    dependencies such tables have (education and age drive occupation and hours;
    these and sex drive income), so a grouping has something to keep."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    sex = rng.choice(["f", "m"], n)
    edu_years = np.clip(rng.normal(13, 3, n).round(), 6, 21).astype(int)
    education = np.select([edu_years < 12, edu_years < 16, edu_years < 18],
                          ["school", "college", "bachelor"], "master")
    occupation = np.where(edu_years + rng.normal(0, 2, n) > 14,
                          rng.choice(["prof", "manager", "tech"], n),
                          rng.choice(["service", "craft", "sales", "clerical"], n))
    hours = np.clip(rng.normal(40, 8, n) - (age > 65) * 15, 5, 80).round().astype(int)
    marital = np.where(age < 25 + rng.integers(0, 10, n), "never",
                       rng.choice(["married", "divorced", "widowed"], n, p=[.7, .2, .1]))
    children = np.where(marital == "never", rng.poisson(0.2, n), rng.poisson(1.6, n))
    region = rng.choice(["north", "south", "east", "west", "centre"], n)
    urban = np.where(region == "centre", rng.random(n) < 0.9, rng.random(n) < 0.5)
    commute = np.clip(rng.gamma(2, 10, n) * np.where(urban, 0.7, 1.4), 0, 180).round(1)
    capital = np.where(rng.random(n) < 0.1, rng.lognormal(8, 1, n), 0.0).round(0)
    health = rng.choice(["good", "fair", "poor"], n, p=[.6, .3, .1])
    bmi = np.clip(rng.normal(26, 4, n) + (health == "poor") * 3, 15, 50).round(1)
    score = (0.08 * (edu_years - 13) + 0.03 * (hours - 40) + 0.02 * (age - 45)
             - 0.0004 * (age - 45) ** 2 + 0.4 * (sex == "m")
             + 0.6 * np.isin(occupation, ["prof", "manager"]) + 0.3 * (capital > 0)
             + rng.normal(0, 0.6, n))
    income = np.where(score > np.quantile(score, 0.7), ">50k", "<=50k")
    table = pd.DataFrame({
        "age": age, "sex": sex, "education": education, "edu_years": edu_years,
        "occupation": occupation, "hours": hours, "marital": marital,
        "children": children, "region": region, "urban": urban.astype(str),
        "commute": commute, "capital": capital, "health": health, "bmi": bmi,
        "income": income})
    return table, "income"


def clinic_table(n: int = 8_000, seed: int = 0) -> tuple[pd.DataFrame, str]:
    """A generated clinical cohort of ``n`` patients and its class column (``death``)."""
    rng = np.random.default_rng(seed)
    age = np.clip(50 + rng.gamma(2.0, 7.5, n), 50, 101).astype(int)
    sex = rng.choice(["F", "M"], n, p=[0.55, 0.45])
    sample_yr = rng.integers(1995, 2004, n)
    frailty = rng.normal(0, 1, n)
    # kappa and lambda light chains: lognormal, correlated, rising with age and kidneys
    creatinine = np.exp(rng.normal(0.0, 0.25, n) + 0.006 * (age - 65) +
                        0.12 * (sex == "M") + 0.1 * frailty).round(1)
    shared = rng.normal(0, 0.35, n)
    kappa = np.exp(0.25 + 0.01 * (age - 65) + 0.3 * np.log(creatinine) + shared +
                   rng.normal(0, 0.2, n)).round(2)
    lambda_ = np.exp(0.35 + 0.008 * (age - 65) + 0.3 * np.log(creatinine) + shared +
                     rng.normal(0, 0.2, n)).round(2)
    total = kappa + lambda_
    flc_grp = np.searchsorted(np.quantile(total, np.linspace(0.1, 0.9, 9)), total) + 1
    mgus = (rng.random(n) < 0.01 + 0.02 * (total > np.quantile(total, 0.9))).astype(int)
    score = (0.085 * (age - 70) + 0.25 * (sex == "M") + 0.9 * np.log(total / 3.0) +
             0.6 * np.log(creatinine) + 0.4 * frailty + 0.8 * mgus - 0.05 * (
                 sample_yr - 1999) + rng.logistic(0, 1, n))
    death = np.where(score > np.quantile(score, 0.72), "dead", "alive")
    table = pd.DataFrame({"patient_id": rng.permutation(n) + 100_000, "age": age,
                          "sex": sex, "sample_yr": sample_yr, "kappa": kappa,
                          "lambda": lambda_, "flc_grp": flc_grp, "creatinine": creatinine,
                          "mgus": mgus, "death": death})
    return table, "death"
