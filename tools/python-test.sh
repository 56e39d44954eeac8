#!/usr/bin/env bash
# Builds the strata Python wheel (maturin, abi3), installs it into a fresh venv and runs the
# pytest suite. Needs Python 3.8+ with venv and network access to PyPI (maturin, pytest).
# Usage: tools/python-test.sh [VENV_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-target/py-venv}
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet "maturin>=1.5,<2" pytest
rm -rf target/wheels
(cd bindings/python && CARGO_TARGET_DIR=../../target/py-build "../../$VENV/bin/maturin" build --release --quiet -o ../../target/wheels)
"$VENV/bin/pip" install --quiet target/wheels/strata-*.whl
# Run from outside the source tree so the installed package is what is imported.
cd bindings/python/tests
"../../../$VENV/bin/python" -m pytest -q -p no:cacheprovider . | tee /tmp/strata-pytest.out
# "no tests collected" must fail.
grep -qE "[0-9]+ passed" /tmp/strata-pytest.out
