"""The release: artefacts and their store, GoldenEye surrogates with their metrics,
the remedies' recipe (what it does to a batch) and the release protocol's decisions.

Fitting a recipe, the privacy-aware choice and the steps the CLI and the operators
share orchestrate the layers above this one: they live in :mod:`astrid_airflow.pipeline`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from astrid_airflow.io import TableFile, check_outside_store, file_format, read_arrow

    from ._artefact import GroupingArtefact
    from ._artefact_ref import LoadedArtefact, load_artefact, parse_artefact_ref
    from ._attacker_model import (
        ROLES,
        SENSITIVE_DIVERSITY,
        AttackerModel,
        check_attacker_model,
        drop_identifiers,
        parse_columns,
        release_attacker_model,
        singling_out_columns,
    )
    from ._dp_accounting import Budget, check_budget, epsilon_of, gaussian_sigma, rho_of
    from ._hashing import row_hashes, splitmix
    from ._history import (
        SOURCE_ROWS_SUFFIX,
        Differencing,
        Isolation,
        SourceRows,
        differencing,
        source_fingerprints,
    )
    from ._intact import (
        IntactSwaps,
        break_intact_rows,
        counted_rows,
        disclosing_rows,
        intact_budget,
    )
    from ._manifest import MANIFEST_FILE
    from ._metrics import (
        expected_intact_row_proportion,
        intact_row_proportion,
        intact_row_shares,
        largest_group_unique_share,
    )
    from ._receipt import (
        artefact_sha256,
        checked_bytes,
        gate_file_sources,
        policy_sha256,
        receipt_trusted,
        seal_gate_receipt,
        seal_receipt,
    )
    from ._recipe import BIN_LADDER, ReleaseRecipe, release_recipe
    from ._release import (
        ReleaseDecision,
        check_receipt,
        check_release_id,
        decide_release,
        new_release_id,
        release_id_from_run,
        release_time,
    )
    from ._remedies import (
        apply_column_step,
        apply_recipe,
        as_float,
        generalise_file,
        mdav_clusters,
        published_type,
    )
    from ._shuffle_steps import metrics_rate
    from ._sql_shuffle import shuffle_table
    from ._store import ArtefactStore
    from ._store_names import check_artefact_name, split_artefact_ref
    from ._suppression import (
        MAX_SUPPRESSED_SHARE,
        Suppression,
        climb_rungs,
        mixed_suppression,
        published_exposure,
        repeated_rows,
        resampled_suppressed_shares,
        suppress_counted,
        suppress_table,
        suppressed_share,
        suppression_budget,
    )
    from ._surrogate import (
        CHUNK_ROWS,
        ProtectsNothingWarning,
        applied_recipe,
        make_surrogate,
        release_domain,
        release_domain_parts,
        remedied,
        resolve_grouping,
        shuffle_file,
        surrogate_paths,
        warn_if_one_group,
    )
    from ._surrogate_metrics import SurrogateMetrics, surrogate_metrics
    from ._synthesis import fit_synthesis, synthesised_values
    from ._table_schema import (
        SchemaCheck,
        column_kind,
        compatible_kind,
        dtype_kind,
        fingerprint_table,
        unique_values,
    )
    from ._table_source import TableSource, table_source
    from ._utility import (
        DomainMemo,
        SplitScore,
        classifier_preset,
        rows_key,
        splits_certainly_above,
        stratified_subsample,
        surrogate_utility,
    )

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
