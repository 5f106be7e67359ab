#!/usr/bin/env bash
# The Debian packages the tests need, installed when any is missing (make test and .ci/run share this list):
# real SIP peers (sipp, baresip, kamailio), audio tools (espeak-ng speaks test callers, sox measures), openssl (the
# TLS tests make their certificates), libgomp1 (llama.cpp's OpenMP threads in the xllamacpp wheel), PostgreSQL (the
# store's second database), chromium and chromium-driver (the supervisor page's browser test), sqlite3 and make.
set -euo pipefail
packages=(make sqlite3 sip-tester baresip-core kamailio espeak-ng sox openssl libgomp1 postgresql chromium chromium-driver)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
    echo "Missing system packages (${missing[*]}) and no apt-get to install them: install them by hand." >&2
    exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2>/dev/null; then sudo=(sudo -n); else
        echo "Missing system packages: ${missing[*]}. Run: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi
echo "Installing the system packages the tests need: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
