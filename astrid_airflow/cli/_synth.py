"""Write the paper's synthetic dataset.

``astrid synth``: write the paper's running example."""

from __future__ import annotations

import argparse

from . import _options as options

DESCRIPTION = None


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_out_option(p, help="output .csv or .parquet", metavar=None)
    p.add_argument("--n-per-class", type=int, default=500,
                   help="rows per class (default 500; at most 1,000,000, exit 2 above)")
    p.add_argument("--seed", type=int, default=0)
    options.add_overwrite_flag(p, help=None)


def run(args: argparse.Namespace) -> int:
    import io

    from astrid_airflow._errors import DataError
    from astrid_airflow.engine import make_synthetic
    from astrid_airflow.io import atomic_write_bytes

    table = make_synthetic(args.n_per_class, random_state=args.seed)
    buf = io.BytesIO()
    if args.out.endswith(".csv"):
        buf.write(table.to_csv(index=False).encode())
    elif args.out.endswith((".parquet", ".pq")):
        table.to_parquet(buf, index=False)
    else:
        raise DataError(f"Cannot write {args.out!r}: expected a .csv or .parquet path.")
    if not args.overwrite:
        import fsspec

        fs, path = fsspec.core.url_to_fs(args.out)
        if fs.exists(path):
            raise DataError(f"{args.out!r} exists; pass --overwrite to replace it.")
    # the write itself refuses an existing file too (not only the check above)
    atomic_write_bytes(args.out, buf.getvalue(), overwrite=args.overwrite)
    print(args.out)
    return 0
