"""benchmarks/bench_release_scale.py --scaleout: the stage commands and the single-file step
(no Dask cluster or Spark session is started here)."""

import importlib.util
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "bench_release_scale", ROOT / "benchmarks" / "bench_release_scale.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_scaleout_commands_use_the_scheduler_and_the_spark_helper(tmp_path):
    local = bench.stage_commands(tmp_path, 100_000, [])
    out = bench.stage_commands(tmp_path, 100_000, [], scheduler="tcp://127.0.0.1:8786",
                               spark=True)
    learn = out["learn"]
    assert "--jobs" not in learn
    assert learn[learn.index("--scheduler") + 1] == "tcp://127.0.0.1:8786"
    assert [a for a in learn if a not in ("--scheduler", "tcp://127.0.0.1:8786")] == \
        [a for a in local["learn"] if a not in ("--jobs", "2")]
    shuffle = out["shuffle"]
    assert shuffle[1].endswith("bench_release_scale.py") and shuffle[2] == "--_spark-shuffle"
    # the helper takes `astrid shuffle`'s flags: the same tail, the same output path
    assert shuffle[3:] == local["shuffle"][2:]
    assert out["validate"] == local["validate"] and out["publish"] == local["publish"]


def test_summary_keeps_the_spark_figures():
    output = {"rows": 10, "seconds": 3.0, "engine": "spark 4 local[2]",
              "spark_startup_seconds": 1.0, "spark_shuffle_seconds": 1.5,
              "spark_stop_seconds": 0.1, "single_file_seconds": 0.2,
              "single_file": {"parts": 2}, "unrelated": 1}
    got = bench.summary_of("shuffle", output)
    assert got["spark_startup_seconds"] == 1.0 and got["single_file"] == {"parts": 2}
    assert "unrelated" not in got


def test_single_parquet_joins_the_parts_in_the_batch_schema(tmp_path):
    like = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"x": pa.array([1, 2, 3], pa.int64()),
                             "s": pa.array(["a", "b", None], pa.large_string())}), like)
    parts = tmp_path / "surrogate.spark"
    parts.mkdir()
    pq.write_table(pa.table({"x": [3, 1], "s": pa.array(["b", "a"], pa.string())}),
                   parts / "part-00000.snappy.parquet")
    pq.write_table(pa.table({"x": [2], "s": pa.array([None], pa.string())}),
                   parts / "part-00001.snappy.parquet")
    (parts / "_SUCCESS").write_text("")
    out = tmp_path / "surrogate.parquet"
    info = bench.single_parquet(parts, out, like=like)
    table = pq.read_table(out)
    assert table.schema.equals(pq.read_schema(like))
    assert info["parts"] == 2 and info["rows"] == 3 and info["schema"] == "the batch's"
    assert sorted(table.column("x").to_pylist()) == [1, 2, 3]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
