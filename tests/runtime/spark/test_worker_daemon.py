"""kspark's PySpark daemon: which of PySpark's zips it moves behind the installed packages."""

from __future__ import annotations

from pathlib import Path

from kspark.runtime.spark.worker_daemon import prefer_installed_pyspark


def _installation(root: Path) -> tuple[str, str]:
    lib = root / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (root / "pyspark" / "__init__.py").write_text("")
    return str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip")


def test_zips_inside_the_installed_pyspark_go_last(tmp_path: Path) -> None:
    pyspark_zip, py4j_zip = _installation(tmp_path / "site-packages")
    path = [pyspark_zip, py4j_zip, "/app", "/site-packages"]
    prefer_installed_pyspark(path)
    assert path == ["/app", "/site-packages", pyspark_zip, py4j_zip]


def test_zips_of_another_spark_installation_stay_first(tmp_path: Path) -> None:
    spark_home = tmp_path / "spark-4.2.0" / "python" / "lib"
    spark_home.mkdir(parents=True)
    path = [str(spark_home / "pyspark.zip"), str(spark_home / "py4j-0.10.9.9-src.zip"), "/app"]
    before = list(path)
    prefer_installed_pyspark(path)
    assert path == before
