#!/usr/bin/env bash
# Installs the Debian packages fleetplan needs to build and test, only when missing.
# Idempotent; downloads nothing but Debian packages. Run as root or with sudo available.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev libssl-dev libxxhash-dev zlib1g-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  clang clang-format clang-tidy libclang-rt-dev
  python3 python3-dev python3-numpy python3-pytest python3-matplotlib pybind11-dev  # Python module
  openmpi-bin libopenmpi-dev  # distributed sweeps (optional at build time: FLEETPLAN_MPI)
  libboost-dev                # HTTP emulator (Boost.Beast / Asio)
  chromium                    # HTML report tested in a real browser
  nghttp2-client              # h2load: emulator load tests
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "install-deps: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
