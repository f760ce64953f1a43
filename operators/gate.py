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

from ._common import (
    as_path,
    atomic_copy,
    atomic_write_text,
    is_local,
    json_small,
    local_input,
    policy_overrides,
    resolve_seed,
    sha256_of,
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
from .shuffle import artefact_dataset, metrics_path, resolve_artefact
from .sql import TableRef, as_table, local_table, sql_errors

__all__ = ["SurrogateGateOperator", "gate_receipt_path", "failure_message"]

_MAX_SHOWN = 160  # characters of an observed value shown in a failure message


def gate_receipt_path(surrogate: ObjectStoragePath,
                      out_dir: ObjectStoragePath | None = None) -> ObjectStoragePath:
    """``<out_dir or surrogate's dir>/<stem>.gate.json``."""
    directory = out_dir if out_dir is not None else surrogate.parent
    return directory / f"{surrogate.stem}.gate.json"


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


def _url(path: ObjectStoragePath) -> str:
    return path.path if is_local(path) else str(path)


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
        "random_state", "remedies", "allow_weaker_policy",
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
                 signing_conn_id: str | None = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        self.signing_conn_id = signing_conn_id
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
        with signing_from(self.signing_conn_id):
            return self._execute(context)

    def _execute(self, context: Any) -> dict[str, Any]:
        from astrid_airflow import gate_receipt, validate_surrogate
        from astrid_airflow.release import seal_gate_receipt

        original = as_table(self.original, "original", self.original_conn_id)
        surrogate = as_path(self.surrogate, "surrogate")
        # a failed run's lineage names what it read (replaced by the full record below)
        self._lineage = {"inputs": [{"location": str(original)},
                                    {"location": str(surrogate)}]}
        out_dir = as_path(self.out_dir, "out_dir") if self.out_dir else surrogate.parent
        store_path = store_location(self.store, self.store_conn_id)
        root, fs = store_url(store_path), store_filesystem(store_path)
        seed = resolve_seed(self.random_state, context)
        overrides = policy_overrides(self.policy)
        with translate_errors(f"Cannot gate {surrogate}"), \
                sql_errors(f"Cannot read {original}"):
            store, name, version = resolve_artefact(root, fs, self.artefact, self.name)
            artefact_path = store.location(name, version).path
            ref = f"{root.rstrip('/')}/{name}@{version}"
            if not surrogate.exists():
                raise AirflowFailException(f"Cannot gate {surrogate}: the staged surrogate "
                                           "does not exist.")
            digest = sha256_of(surrogate)
            # a remote surrogate is downloaded under its own name, so the outputs keep
            # the staged file's stem
            with local_table(original) as orig, local_input(surrogate) as surr, \
                    _local_dir(out_dir) as outputs:
                result = validate_surrogate(orig, surr, ref, policy=overrides,
                                            out_dir=outputs, random_state=seed, fs=fs,
                                            remedies=to_bool(self.remedies, "remedies"),
                                            allow_weaker_policy=to_bool(
                                                self.allow_weaker_policy,
                                                "allow_weaker_policy"))
                # a database original exists only as this temporary dump
                release_report, report_files = self._write_report(
                    ref, fs, orig if isinstance(original, TableRef) else original, surrogate,
                    out_dir)
        # The receipt names the bytes the gate judged: the library hashed the file it
        # read (before and after judging it); the staged file must still be those bytes.
        if result.surrogate_sha256 != digest or sha256_of(surrogate) != digest:
            raise AirflowFailException(f"Cannot gate {surrogate}: the staged surrogate "
                                       "changed while it was judged; nothing was decided.")
        report = result.to_dict()
        validation = out_dir / Path(report["validation_json"]).name
        docs = out_dir / Path(report["data_docs"]).name
        receipt = gate_receipt(result, surrogate=surrogate, sha256=digest,
                               original=original, artefact=f"{name}@{version}",
                               artefact_path=artefact_path, store=root, out_dir=out_dir,
                               report=release_report, run_id=context.get("run_id"))
        # bound to what the gate read and wrote; publish archives only these files
        receipt = seal_gate_receipt(receipt, result, out_dir=out_dir, stem=surrogate.stem,
                                    report_files=report_files)
        receipt_path = gate_receipt_path(surrogate, out_dir)
        atomic_write_text(receipt_path, json.dumps(json_small(receipt), indent=2) + "\n")
        # recorded before a failure is raised: the links of a failed gate work too
        push_links(self, context, data_docs=docs, report=release_report, artefact=artefact_path)
        self._lineage = _gate_lineage(original, surrogate, root, receipt, validation,
                                      receipt_path)
        where = (f"Data Docs: {resolve_link(self, str(docs))}; release report: "
                 f"{resolve_link(self, release_report) or 'none'}")
        if not result.success:
            self.log.error("Release gate failed for %s. %s", surrogate, where)
            raise AirflowFailException(failure_message(str(surrogate),
                                                       receipt["expectations"]))
        self.log.info("Release gate passed for %s (%d expectations). %s",
                      surrogate, len(receipt["expectations"]), where)
        return _payload(surrogate, digest, receipt, receipt_path, validation, docs,
                        release_report)

    def _write_report(self, ref: str, fs: Any, original: ObjectStoragePath | str,
                      surrogate: ObjectStoragePath, out_dir: ObjectStoragePath
                      ) -> tuple[str | None, tuple[str, ...]]:
        """The release report beside the Data Docs (``<stem>.report/index.html``) and the
        names of the files it wrote.

        Written whether the gate passes or fails, so a reviewer sees why; a report that
        cannot be written is logged and does not decide the release.
        """
        from astrid_airflow import AstridError, write_report
        from astrid_airflow.io import using

        target = out_dir / f"{surrogate.stem}.report"
        metrics_file = metrics_path(surrogate)
        # the shuffle operator's receipt nests the SurrogateMetrics under "metrics"
        from astrid_airflow.io import load_json

        metrics = load_json(metrics_file.read_bytes(), str(metrics_file))["metrics"] \
            if metrics_file.exists() else None
        try:
            with using(fs):  # the artefact read through the store's connection
                written = write_report(
                    ref, _url(target),
                    original=original if isinstance(original, str) else _url(original),
                    surrogate=_url(surrogate),
                    surrogate_metrics=metrics,
                    data_docs=f"../{surrogate.stem}.validation.html", overwrite=True)
        except (AstridError, OSError) as exc:
            self.log.warning("No release report for %s: %s", surrogate, exc)
            return None, ()
        self.log.info("Release report: %s", written.index)
        return str(written.index), tuple(written.files)


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
