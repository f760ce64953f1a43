"""The release: artefacts and their store, GoldenEye surrogates with their
metrics, remedies, the privacy-aware choice, the release protocol and the
pipeline steps the CLI and the operators share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._artefact import (
        GroupingArtefact,
        SchemaCheck,
        column_kind,
        compatible_kind,
        fingerprint_table,
        unique_values,
    )
    from ._choice import choose_release
    from ._manifest import MANIFEST_FILE
    from ._metrics import (
        SurrogateMetrics,
        TableSource,
        expected_intact_row_proportion,
        intact_row_proportion,
        largest_group_unique_share,
        row_hashes,
        splitmix,
        stratified_subsample,
        surrogate_metrics,
        surrogate_utility,
        table_source,
    )
    from ._pipeline import (
        Learned,
        ReleasePlan,
        StagedSurrogate,
        gate_receipt,
        learn_or_reuse,
        receipt_path,
        release_plan,
        save_learned,
        sealed_receipt_of,
        stage_surrogate,
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
    from ._release import (
        ReleaseDecision,
        check_receipt,
        check_release_id,
        decide_release,
        release_time,
    )
    from ._remedies import ReleaseRecipe, apply_recipe, fit_recipe, generalise_file
    from ._store import (
        ArtefactStore,
        LoadedArtefact,
        check_artefact_name,
        check_outside_store,
        load_artefact,
        parse_artefact_ref,
        split_artefact_ref,
    )
    from ._surrogate import (
        CHUNK_ROWS,
        ProtectsNothingWarning,
        TableFile,
        file_format,
        make_surrogate,
        read_arrow,
        release_recipe,
        remedied,
        resolve_grouping,
        shuffle_file,
        warn_if_one_group,
    )

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
