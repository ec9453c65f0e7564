# contend.sh LABEL LOG ROUNDS NAME BATON: ROUNDS `BATON run`s one after another on NAME
# (the store from $BATON_URL), each appending "start NS TOKEN LABEL" and "end NS TOKEN
# LABEL" to LOG around a 0.2 s hold. Run at once inside the arm64 root (the aarch64 CLI) and
# on the host (the x86_64 one): both sides read one clock, so LOG orders their holds
# (scripts/suites/70-platforms.sh checks no overlap and rising tokens).
set -eu
label=$1 log=$2 rounds=$3 name=$4 baton=$5
i=0
while [ "$i" -lt "$rounds" ]; do
    "$baton" run --wait 90s "$name" -- sh -c \
        "echo \"start \$(date +%s%N) \$BATON_FENCING_TOKEN $label\" >> $log; sleep 0.2; echo \"end \$(date +%s%N) \$BATON_FENCING_TOKEN $label\" >> $log" \
        || { echo "round $i of $label failed" >&2; exit 1; }
    i=$((i + 1))
done
