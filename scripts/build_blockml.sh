#!/usr/bin/env bash
# Builds tokenmill/extract/_blockml (blockml's walk, text features and forest in C; `make` runs this):
#   1. a build virtualenv with Cython (a build tool only: nothing at run time imports it)
#   2. selectolax's sdist, pinned by sha256, of which only lexbor's headers and selectolax's
#      lexbor.pxd are read: the structs the walk reads must be laid out as in the lexbor compiled
#      into the installed selectolax wheel (requirements.txt pins the same version)
#   3. cython, then one gcc call against the headers of the Python that will import it
# Needs gcc and Python 3.11's headers (Debian: gcc python3-dev; tokenmill.system installs them) and
# PyPI. Usage: PYTHON=.venv/bin/python scripts/build_blockml.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-.venv/bin/python}"
WORK=build/blockml
OUT=tokenmill/extract
SELECTOLAX=1.0.2
CYTHON=3.3.1
SDIST="selectolax-$SELECTOLAX.tar.gz"
URL="https://files.pythonhosted.org/packages/3a/24/1a8b1b1a7cc8734b626327badccb4fd0f6c745a8cfd1b625923b5f07dd84/$SDIST"
SHA256=f0508ad927aa426425d4aa7a2bb2f8b21c01412534465bd227e241d4d0a6a418

"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
    || { echo "build_blockml.sh: $PYTHON is not Python 3.11" >&2; exit 1; }
PY_INCLUDE="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
EXT_SUFFIX="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
[ -f "$PY_INCLUDE/Python.h" ] || { echo "build_blockml.sh: no $PY_INCLUDE/Python.h (apt-get install python3-dev)" >&2; exit 1; }
command -v gcc > /dev/null || { echo "build_blockml.sh: no gcc (apt-get install gcc)" >&2; exit 1; }
mkdir -p "$WORK"

if [ ! -x "$WORK/venv/bin/cython" ]; then
    "$PYTHON" -m venv "$WORK/venv"
    "$WORK/venv/bin/python" -m pip --disable-pip-version-check install -q "Cython==$CYTHON"
fi

# curl first: `pip download --no-binary` would build the sdist's metadata (minutes) to fetch it
if ! echo "$SHA256  $WORK/$SDIST" | sha256sum -c --status 2>/dev/null; then
    curl -fsSL --retry 3 -o "$WORK/$SDIST.tmp" "$URL" && mv "$WORK/$SDIST.tmp" "$WORK/$SDIST" \
        || "$WORK/venv/bin/python" -m pip --disable-pip-version-check download "selectolax==$SELECTOLAX" \
           --no-binary :all: --no-deps -d "$WORK"
    echo "$SHA256  $WORK/$SDIST" | sha256sum -c --status \
        || { echo "build_blockml.sh: $WORK/$SDIST does not have sha256 $SHA256" >&2; exit 1; }
fi
rm -rf "$WORK/src"
mkdir -p "$WORK/src"
tar -xzf "$WORK/$SDIST" -C "$WORK/src" --strip-components=1 --wildcards \
    "selectolax-$SELECTOLAX/lexbor/source/lexbor/*.h" \
    "selectolax-$SELECTOLAX/selectolax/__init__.py" "selectolax-$SELECTOLAX/selectolax/lexbor.pxd"

"$WORK/venv/bin/cython" -3 -I "$WORK/src" -o "$WORK/_blockml.c" "$OUT/_blockml.pyx"
gcc -shared -fPIC -O2 -g0 -std=gnu11 -DLEXBOR_STATIC -DNDEBUG \
    -Wno-unused-function -Wno-unused-variable -Wno-overlength-strings \
    -I "$PY_INCLUDE" -I "$WORK/src/lexbor/source" -I "$OUT" \
    -o "$OUT/_blockml$EXT_SUFFIX.tmp" "$WORK/_blockml.c"
mv "$OUT/_blockml$EXT_SUFFIX.tmp" "$OUT/_blockml$EXT_SUFFIX"
echo "built $OUT/_blockml$EXT_SUFFIX"
