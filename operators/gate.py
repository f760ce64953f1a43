"""``SurrogateGateOperator``: the release gate on a staged surrogate.

Runs the Great Expectations suite stored with the artefact version (privacy, utility,
integrity; see ``docs/gate.md``) and writes, beside the surrogate, the validation result
JSON, the Data Docs page and a small ``<stem>.gate.json`` receipt naming the exact file
that was judged (its SHA-256). The publish operator releases only a file whose receipt
says it passed. A failed gate fails the task without retries (the data will not
improve by waiting) with a message naming each failed expectation and its observed value.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from airflow.sdk import BaseOperator, ObjectStoragePath

from astrid_airflow.pipeline import receipt_path

from ._common import (
    as_path,
    atomic_copy,
    is_local,
    json_small,
    local_input,
    policy_overrides,
    resolve_seed,
    store_filesystem,
    store_location,
    store_url,
    to_bool,
    translate_errors,
)
from ._compat import AirflowFailException
from ._lineage import RecordsLineage, metric_name, numeric
from ._signing import DEFAULT_CONN_ID, signing_from
from .links import ArtefactLink, DataDocsLink, ReleaseReportLink, push_links, resolve_link
from .shuffle import artefact_dataset, resolve_artefact
from .sql import as_table, local_table, sql_errors

__all__ = ["SurrogateGateOperator", "gate_receipt_path", "failure_message"]

_MAX_SHOWN = 160  # characters of an observed value shown in a failure message

# ``<out_dir or the surrogate's directory>/<stem>.gate.json``: the library's one rule
gate_receipt_path = receipt_path


def _short(value: Any) -> str:
    text = json.dumps(json_small(value), default=str)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN - 1] + "…"


def failure_message(surrogate: str, outcomes: Sequence[dict[str, Any]]) -> str:
    """One line per failed expectation: name, observed value, threshold."""
    lines = [f"Release gate FAILED for {surrogate}:"]
    for o in outcomes:
        if o.get("success"):
            continue
        line = f"  - {o['name']}: observed {_short(o.get('observed_value'))}"
        if o.get("threshold") is not None:
            line += f" (threshold {_short(o['threshold'])})"
        lines.append(line)
    return "\n".join(lines)


@contextlib.contextmanager
def _local_dir(target: ObjectStoragePath) -> Iterator[str]:
    """A local directory for outputs of ``target``; remote ones are uploaded after."""
    if is_local(target):
        Path(target.path).mkdir(parents=True, exist_ok=True)
        yield target.path
        return
    with tempfile.TemporaryDirectory(prefix="astrid_gate_") as tmp:
        yield tmp
        for entry in sorted(Path(tmp).iterdir()):
            atomic_copy(ObjectStoragePath("file://" + str(entry)), target / entry.name)


class SurrogateGateOperator(RecordsLineage, BaseOperator):
    """Validate a staged surrogate against its original with the artefact's gate suite.

    Parameters
    ----------
    original : str or ObjectStoragePath
        The table the surrogate was made from: a file, or a database table
        ``conn://CONN_ID/SCHEMA.TABLE`` (templated).
    original_conn_id : str, optional
        The Airflow connection of ``original``: a common.sql database connection, in which
        ``original`` is a table (``[SCHEMA.]TABLE``) or a ``SELECT`` query, or the
        object-storage connection that opens a ``original`` URL. Without it, ``original`` is a
        file, a URL or the legacy ``conn://CONN_ID/SCHEMA.TABLE`` (templated).
    surrogate : str or ObjectStoragePath
        The staged surrogate (templated).
    store : str or ObjectStoragePath, optional
        Root of the artefact store (templated).
    store_conn_id : str, optional
        The Airflow connection of the store: an ``astrid`` connection (the store is the
        connection's Store URL; leave ``store`` empty) or the object-storage connection
        that opens the ``store`` URL (``aws_default``...). Without it ``store`` alone
        (legacy: ``s3://CONN_ID@bucket/...``) (templated).
    artefact : str
        ``NAME@VERSION``, ``NAME`` or ``latest`` with ``name`` (templated).
    name : str, optional
        Artefact name when ``artefact`` is ``latest`` (templated).
    policy : dict, optional
        Run-time threshold overrides (``max_intact``, ``max_accuracy_drop``,
        ``max_largest_group_unique_share``, ``classifier``); values may be templates
        (templated). Unset thresholds come from the suite stored with the artefact.
    out_dir : str or ObjectStoragePath, optional
        Where results go; default beside the surrogate (templated).
    random_state : int or None
        Seed of the utility check (templated); ``None`` derives it from the run.
    remedies : bool, default True
        The staged surrogate is the artefact's remedied release (as the shuffle
        operator stages by default); ``False`` judges a raw release (templated).
    allow_weaker_policy : bool, default False
        Accept ``policy`` overrides that loosen a privacy threshold of the default
        policy (refused otherwise); recorded in the receipt and the release record
        (templated; docs/gate.md).
    link_base_url : dict or str, optional
        Storage prefix → public base URL for the extra links ("Data Docs", "Release
        report", "Artefact"); default the ``[astrid] link_base_url`` option, else the
        files' own locations (see ``astrid_airflow.operators.links``).
    allow_unsigned : bool, default False
        Read an artefact store that no configured key signed (saved before signing was
        the default) as checksummed only; recorded in the receipt and the release
        manifest (templated). ``ASTRID_ALLOW_UNSIGNED=1`` does the same for a worker.
    signing_conn_id : str, optional
        Airflow connection holding the key that verifies the store's manifests and
        signs the receipt (default ``astrid_signing``; without that connection,
        ``$ASTRID_SIGNING_KEY``, else the receipt is unsigned and publish gates again).

    Returns (XCom)
    --------------
    dict
        ``success``, ``surrogate``, ``sha256``, ``receipt``, ``validation``,
        ``data_docs``, ``artefact``, ``observed`` (expectation → observed value, scalars
        only). Only returned when the gate passed; otherwise ``AirflowFailException``.
    """

    template_fields: Sequence[str] = (
        "original_conn_id", "store_conn_id",
        "original", "surrogate", "store", "artefact", "name", "policy", "out_dir",
        "random_state", "remedies", "allow_weaker_policy", "allow_unsigned",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"policy": "json"}
    ui_color = "#d4edda"
    operator_extra_links = (DataDocsLink(), ReleaseReportLink(), ArtefactLink())

    def __init__(self, *, original: Any, surrogate: Any, store: Any = None, artefact: str,
                 original_conn_id: str | None = None, store_conn_id: str | None = None,
                 name: str | None = None, policy: dict[str, Any] | str | None = None,
                 out_dir: Any = None, random_state: int | str | None = None,
                 remedies: bool | str = True, link_base_url: Any = None,
                 allow_weaker_policy: bool | str = False,
                 signing_conn_id: str | None = DEFAULT_CONN_ID,
                 allow_unsigned: bool | str = False, **kwargs: Any) -> None:
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        self.signing_conn_id = signing_conn_id
        self.allow_unsigned = allow_unsigned
        self.original = original
        self.surrogate = surrogate
        self.store = store
        self.original_conn_id = original_conn_id
        self.store_conn_id = store_conn_id
        self.artefact = artefact
        self.name = name
        self.policy = policy
        self.out_dir = out_dir
        self.random_state = random_state
        self.remedies = remedies
        self.link_base_url = link_base_url
        self.allow_weaker_policy = allow_weaker_policy

    def execute(self, context: Any) -> dict[str, Any]:
        # the store's manifests are verified, and the receipt signed, with this key
        with signing_from(self.signing_conn_id, self.allow_unsigned):
            return self._execute(context)

    def _execute(self, context: Any) -> dict[str, Any]:
        from astrid_airflow.pipeline import GateRequest, gate_release

        original = as_table(self.original, "original", self.original_conn_id)
        surrogate = as_path(self.surrogate, "surrogate")
        # a failed run's lineage names what it read (replaced by the full record below)
        self._lineage = {"inputs": [{"location": str(original)},
                                    {"location": str(surrogate)}]}
        out_dir = as_path(self.out_dir, "out_dir") if self.out_dir else surrogate.parent
        store_path = store_location(self.store, self.store_conn_id)
        root, fs = store_url(store_path), store_filesystem(store_path)
        with translate_errors(f"Cannot gate {surrogate}"), \
                sql_errors(f"Cannot read {original}"):
            _, name, version = resolve_artefact(root, fs, self.artefact, self.name)
            # a remote surrogate is downloaded under its own name, so the outputs keep
            # the staged file's stem; a database original exists only as this dump
            with local_table(original) as orig, local_input(surrogate) as surr:
                gated = gate_release(GateRequest(
                    original=orig, original_name=original, surrogate=surrogate,
                    surrogate_file=surr, artefact=f"{root.rstrip('/')}/{name}@{version}",
                    out_dir=out_dir, outputs=lambda: _local_dir(out_dir), fs=fs,
                    policy=policy_overrides(self.policy), run_id=context.get("run_id"),
                    random_state=resolve_seed(self.random_state, context),
                    remedies=to_bool(self.remedies, "remedies"),
                    allow_weaker_policy=to_bool(self.allow_weaker_policy,
                                                "allow_weaker_policy")))
        return self._verdict(context, original, surrogate, root, gated)

    def _verdict(self, context: Any, original: Any, surrogate: ObjectStoragePath,
                 root: str, gated: Any) -> dict[str, Any]:
        """Links, lineage and the log of a gate run; a failed gate fails the task."""
        receipt, docs, report = gated.receipt, gated.data_docs, gated.report
        if gated.report_problem:
            self.log.warning("No release report for %s: %s", surrogate,
                             gated.report_problem)
        # recorded before a failure is raised: the links of a failed gate work too
        push_links(self, context, data_docs=docs, report=report,
                   artefact=receipt["artefact_path"])
        self._lineage = _gate_lineage(original, surrogate, root, receipt,
                                      gated.validation, gated.receipt_path)
        where = (f"Data Docs: {resolve_link(self, str(docs))}; release report: "
                 f"{resolve_link(self, report) or 'none'}")
        if not gated.success:
            self.log.error("Release gate failed for %s. %s", surrogate, where)
            raise AirflowFailException(failure_message(str(surrogate),
                                                       receipt["expectations"]))
        self.log.info("Release gate passed for %s (%d expectations). %s",
                      surrogate, len(receipt["expectations"]), where)
        return _payload(surrogate, gated.sha256, receipt, gated.receipt_path,
                        gated.validation, docs, report)


def _gate_lineage(original: Any, surrogate: ObjectStoragePath, root: str,
                  receipt: dict[str, Any], validation: ObjectStoragePath,
                  receipt_path: ObjectStoragePath) -> dict[str, Any]:
    """OpenLineage: the expectations and figures on the surrogate."""
    observed = numeric({metric_name(e["name"]): e["observed_value"]
                        for e in receipt["expectations"]})
    return {
        "inputs": [{"location": str(original)},
                   {"location": str(surrogate), "rows": observed.get("row_count"),
                    "assertions": receipt["expectations"], "metrics": observed},
                   artefact_dataset(root, receipt["artefact"])],
        "outputs": [{"location": str(validation)}, {"location": str(receipt_path)}]}


def _payload(surrogate: ObjectStoragePath, digest: str, receipt: dict[str, Any],
             receipt_path: ObjectStoragePath, validation: ObjectStoragePath,
             docs: ObjectStoragePath, release_report: str | None) -> dict[str, Any]:
    """The XCom value of a passed gate."""
    return json_small({
        "success": True,
        "surrogate": str(surrogate),
        "sha256": digest,
        "receipt": str(receipt_path),
        "validation": str(validation),
        "data_docs": str(docs),
        "report": release_report,
        "artefact": receipt["artefact"],
        "observed": {e["name"]: e["observed_value"] for e in receipt["expectations"]
                     if isinstance(e["observed_value"], (int, float, str, bool))},
    })
