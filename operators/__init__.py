"""Airflow operators of astrid-airflow (installed as ``astrid_airflow.operators``).

Nothing is imported here: import the operator modules directly, e.g.
``from astrid_airflow.operators.learn import AstridLearnOperator``.
"""
