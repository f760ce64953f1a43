#!/usr/bin/env bash
# System packages the tests need beyond the Python environment, installed only when
# missing (idempotent, quiet). Called by .ci/run; safe to run by hand as root.
#   - a Java runtime for PySpark (tests/scale/test_spark.py, the 'spark' extra): Spark 4 needs
#     Java 17 or 21; Debian 12's default-jre-headless is OpenJDK 17.
set -euo pipefail

missing=()
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "ci_system_deps: not root; cannot install ${missing[*]} (Spark tests will fail)" >&2
    exit 0
fi
echo "ci_system_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Debian's JRE post-install scripts need the man directories that slim images drop.
mkdir -p /usr/share/man/man1
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" \
        >/dev/null; }; then
    echo "ci_system_deps: could not install ${missing[*]} (Spark tests will fail)" >&2
fi
