#!/usr/bin/env bash
# Checks the Debian package built by `cargo deb`: every file where the install expects it, with
# the right mode, nothing world-writable, the configuration a conffile, the unit starting the
# packaged binary. Usage: scripts/check_deb.sh [target/debian/eboardd_*.deb]
set -euo pipefail
deb=${1:-$(ls -t target/debian/eboardd_*.deb | head -n 1)}
echo "checking $deb"
listing=$(dpkg-deb -c "$deb")
fail=0
expect() { # mode path
  if ! grep -Eq "^$1 (root/root|0/0) +[0-9]+ [0-9-]+ [0-9:]+ \./$2\$" <<<"$listing"; then
    echo "missing or wrong mode: $1 $2"
    fail=1
  fi
}
expect '-rwxr-xr-x' 'usr/bin/eboardd'
expect '-rw-r--r--' 'usr/lib/systemd/system/eboardd.service'
expect '-rw-r--r--' 'lib/udev/rules.d/70-eboardd.rules'
expect '-rw-r--r--' 'etc/eboardd/eboardd.toml'
expect '-rw-r--r--' 'usr/share/doc/eboardd/copyright'
# The front door and the manual it links to (README.md's links into docs/ resolve in the package).
expect '-rw-r--r--' 'usr/share/doc/eboardd/README.md'
for doc in docs/*.md docs/grafana-dashboard.json; do
  expect '-rw-r--r--' "usr/share/doc/eboardd/$doc"
done
# Nothing world-writable (the mode's 9th character), no setuid/setgid.
if awk '{print $1}' <<<"$listing" | grep -Eq '^.{8}w|[sS]'; then
  echo "world-writable or set-id entries:"
  awk '$1 ~ /^.{8}w/ || $1 ~ /[sS]/' <<<"$listing"
  fail=1
fi
dpkg-deb --info "$deb" conffiles | grep -qx '/etc/eboardd/eboardd.toml' || {
  echo "/etc/eboardd/eboardd.toml is not a conffile"
  fail=1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp"
grep -q '^ExecStart=/usr/bin/eboardd run --config /etc/eboardd/eboardd.toml$' \
  "$tmp/usr/lib/systemd/system/eboardd.service" || {
  echo "the unit does not start /usr/bin/eboardd with /etc/eboardd/eboardd.toml"
  fail=1
}
# A reload checks the file first (ExecReload= lines run in order; the first failure stops them).
grep -A1 -x 'ExecReload=/usr/bin/eboardd check --config /etc/eboardd/eboardd.toml' \
  "$tmp/usr/lib/systemd/system/eboardd.service" | grep -qx 'ExecReload=/bin/kill -HUP \$MAINPID' || {
  echo "the unit does not run eboardd check before the SIGHUP of a reload"
  fail=1
}
"$tmp/usr/bin/eboardd" --version >/dev/null || {
  echo "the packaged binary does not run"
  fail=1
}
((fail == 0)) && echo "package OK: $(du -h "$deb" | cut -f1)"
exit "$fail"
