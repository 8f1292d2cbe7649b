#!/usr/bin/env bash
# Creates the Python virtual environment of the libtorrent interop harness
# and installs libtorrent's Python bindings (PyPI `libtorrent`, 2.1.x) in
# it. Idempotent: a venv that already has a libtorrent 2.1.x is left alone.
#
#   interop/libtorrent/setup.sh          # venv in .venv-libtorrent at the repository root
#   HOPWISE_LT_VENV=/opt/lt interop/libtorrent/setup.sh
#
# Prints the venv's python on the last line of stdout, for
# HOPWISE_LT_PYTHON. On a Debian or Ubuntu machine without the venv module
# it installs python3-venv with apt-get (root needed).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${HOPWISE_LT_VENV:-$root/.venv-libtorrent}"
py="$venv/bin/python"
# The bindings' series the harness is written for (settings names, peer
# flags, create_torrent's v1_only flag).
spec='libtorrent>=2.1,<2.2'

have_lt() {
  [ -x "$py" ] && "$py" - <<'PY' 2>/dev/null
import sys
import libtorrent as lt
v = tuple(int(x) for x in lt.__version__.split(".")[:2])
sys.exit(0 if v == (2, 1) else 1)
PY
}

if have_lt; then
  echo "libtorrent $("$py" -c 'import libtorrent as lt; print(lt.__version__)') already in $venv" >&2
  echo "$py"
  exit 0
fi

if ! command -v python3 >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "installing python3 with apt-get" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >&2
  else
    echo "setup.sh: python3 is missing; install Python 3.8 or later" >&2
    exit 1
  fi
fi

if [ ! -x "$py" ]; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    rm -rf "$venv"
    if command -v apt-get >/dev/null 2>&1; then
      # Debian splits the venv module (and ensurepip) into python3-venv.
      ver="$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
      echo "python3 -m venv failed: installing python3-venv with apt-get" >&2
      apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2 \
        || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python$ver-venv" >&2
      python3 -m venv "$venv" >&2
    else
      echo "setup.sh: \`python3 -m venv $venv\` failed and there is no apt-get; install Python's venv module" >&2
      exit 1
    fi
  fi
fi

echo "installing $spec into $venv" >&2
"$py" -m pip install --quiet --disable-pip-version-check "$spec" >&2
if ! have_lt; then
  echo "setup.sh: $py cannot import libtorrent 2.1 after pip install" >&2
  exit 1
fi
echo "libtorrent $("$py" -c 'import libtorrent as lt; print(lt.__version__)') installed in $venv" >&2
echo "$py"
