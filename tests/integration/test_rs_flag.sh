#!/bin/sh
# unit.gateway.rs_flag: the gateway's --rs flag and config key. An unknown
# replica-selection policy stops it at start with exit 2 and one line on
# stderr naming the known ones; --help shows the flag and its default.
# Usage: rs_flag.sh PATH/TO/shoal-gateway
gw="$1"
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

"$gw" --data-dir "$d" --rs nope 2>"$d/err"
rc=$?
[ "$rc" -eq 2 ] || fail "--rs nope: exit $rc"
[ "$(wc -l <"$d/err")" -eq 1 ] || fail "--rs nope: stderr: $(cat "$d/err")"
grep -q "unknown policy 'nope' (known: fast uniform)" "$d/err" || fail "--rs nope: $(cat "$d/err")"

printf 'rs = fastest\n' >"$d/conf"
"$gw" --config "$d/conf" --data-dir "$d" 2>"$d/err"
rc=$?
[ "$rc" -eq 2 ] || fail "config rs: exit $rc"
grep -q "fastest" "$d/err" || fail "config rs: $(cat "$d/err")"

"$gw" --help >"$d/help" || fail "--help"
grep -- "--rs" "$d/help" | grep -q "(default: fast)" || fail "--help: no --rs with its default"
[ ! -e "$d/meta" ] || fail "the metadata store was opened before the flags were checked"
echo ok
