#!/bin/sh
# .ci/sim-identical.sh BEFORE AFTER [SEED]: runs every bundled simulated drill
# (drills/*.toml whose mode is "sim" or unset, plus the flagship scaled x10)
# with both stormdrill binaries and the same seed, and compares their
# summary.json byte for byte. A speed change to the simulator must not move
# a figure. Exit 1 on the first difference in any drill (all are run).
set -u
before=$1 after=$2 seed=${3:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The flagship at 2,000 subscribers, as stormdrill bench --scale 10 runs it.
sed -e 's/^count            = 199$/count            = 1990/' \
    -e 's/^count   = 1$/count   = 10/' \
    -e 's/^workers                 = 64$/workers                 = 640/' \
    -e 's/^queue_capacity          = 100000$/queue_capacity          = 1000000/' \
    -e 's/^name        = "fanout-outage"$/name        = "fanout-outage-x10"/' \
    drills/fanout-outage.toml >"$work/fanout-outage-x10.toml"
status=0 n=0
for f in drills/*.toml "$work/fanout-outage-x10.toml"; do
	mode=$(sed -n 's/^mode *= *"\(.*\)".*/\1/p' "$f")
	case "$mode" in "" | sim) ;; *) continue ;; esac
	name=$(basename "$f" .toml)
	for b in before after; do
		eval bin=\$$b
		if ! "$bin" run "$f" --seed "$seed" --quiet --out "$work/$b/$name" >"$work/$b-$name.log" 2>&1; then
			# A drill whose gates fail exits non-zero but still writes its summary.
			test -f "$work/$b/$name/summary.json" || { echo "FAIL $name: $b wrote no summary"; cat "$work/$b-$name.log"; status=1; continue 2; }
		fi
	done
	n=$((n + 1))
	if cmp -s "$work/before/$name/summary.json" "$work/after/$name/summary.json"; then
		echo "same $name ($(wc -c <"$work/after/$name/summary.json") bytes)"
	else
		echo "DIFF $name"
		diff "$work/before/$name/summary.json" "$work/after/$name/summary.json" | head -20
		status=1
	fi
done
echo "$n drills compared, seed $seed"
exit $status
