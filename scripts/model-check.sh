#!/usr/bin/env bash
# Model-checks the runtime's lock-free protocols with spin (Promela models beside the code they
# model; the Architecture article's "Model-checked protocols" says what the first two cover, the
# model's own header what the third does):
#   scheduling-right.pml  the mailbox's scheduling right (mailbox.c: push, pop_batch, finish_turn)
#   event-count.pml       the event count that parks workers (parking.c, Worker.run, notifyIdle)
#   entity-gate.pml       TroupeVirtualActors' gate, which lets senders reach an entity's activation
#                         without a lock and the region stop it without losing a message
#                         (Sources/TroupeVirtualActors/Models)
#   handoff.pml           TroupeClusterEntities' ordered handoff between nodes: markers and
#                         confirmations in FIFO lines, held messages (Sources/TroupeClusterEntities/Models)
# Every real configuration must pass (no error, state space searched completely), and every
# deliberately broken variant must fail (spin finds a counterexample), which shows that each
# check can fail. One summary line per run; exit status 1 when any expectation is not met.
# Installs spin and gcc from Debian when missing (needs root). Takes about half a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
model_dirs=("$PWD/Sources/CTroupe/models" "$PWD/Sources/TroupeVirtualActors/Models"
    "$PWD/Sources/TroupeClusterEntities/Models")

if ! command -v spin > /dev/null || ! command -v gcc > /dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y spin gcc > /dev/null \
        || { apt-get update > /dev/null && apt-get install -y spin gcc > /dev/null; }
fi

echo "model-check: $(spin -V | head -1); $(gcc --version | head -1)"
echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "command: $0${*:+ $*}"
echo "each run, in a temporary directory: spin -a -D... MODEL.pml; gcc -O1 (-O0 if broken) ..."
echo "  safety:   gcc -DSAFETY -DNOCLAIM -o pan pan.c; ./pan -m200000"
echo "  liveness: gcc -DNFAIR=4 -o pan pan.c; ./pan -a -f -m200000 (weak fairness, the ltl claim)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=0
unmet=0
started=$(date +%s)

# Runs as many checks at once as there are CPUs; summaries print in order at the end.
parallel=$(nproc 2> /dev/null || echo 1)

# check MODEL EXPECT MODE [SPIN DEFINES...]: starts one run in the background.
#   EXPECT: pass (0 errors, complete search) or fail (spin reports an error)
#   MODE:   safety (assertions, invalid end states) or liveness (the model's LTL claim, with
#           weak fairness)
check() {
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
    local dir=$work/$(printf '%03d' "$runs")
    runs=$((runs + 1))
    mkdir -p "$dir"
    run_one "$dir" "$@" > "$dir/summary" 2>&1 &
}

run_one() {
    local dir=$1 model=$2 expect=$3 mode=$4
    shift 4
    local label="${*:-defaults}"
    local source
    for source in "${model_dirs[@]}"; do
        if [ -f "$source/$model.pml" ]; then cp "$source/$model.pml" "$dir/"; fi
    done
    local cflags pan_flags
    if [ "$mode" = safety ]; then
        cflags=(-DSAFETY -DNOCLAIM)
        pan_flags=(-m200000)
    else
        cflags=(-DNFAIR=4)
        pan_flags=(-a -f -m200000)
    fi
    # Real configurations explore millions of states: optimise (-O2 runs no faster than -O1 and
    # compiles slower); broken ones fail within a few thousand: compile fast.
    if [ "$expect" = pass ]; then cflags+=(-O1); else cflags+=(-O0); fi
    local out=$dir/pan.out verdict detail
    if ! (cd "$dir" && spin -a "$@" "$model.pml" > spin.out 2>&1); then
        cat "$dir/spin.out"
        verdict=UNMET detail="spin -a failed"
    elif ! (cd "$dir" && gcc -w "${cflags[@]}" -o pan pan.c > gcc.out 2>&1); then
        cat "$dir/gcc.out"
        verdict=UNMET detail="gcc failed"
    else
        (cd "$dir" && timeout 600 ./pan "${pan_flags[@]}" > "$out" 2>&1) || true
        local errors complete=yes
        errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$out" | head -1)
        if grep -qE 'max search depth too small|Search not completed|out of memory|too many proc' "$out" \
            || ! grep -q 'Full statespace search' "$out"; then
            complete=no
        fi
        if [ -z "$errors" ]; then
            tail -20 "$out"
            verdict=UNMET detail="pan did not finish"
        elif [ "$expect" = pass ]; then
            if [ "$errors" = 0 ] && [ "$complete" = yes ]; then
                verdict=ok detail="passes: 0 errors, complete search"
            else
                sed -n '/^pan:/p;/error:/p' "$out" | head -5
                verdict=UNMET detail="expected to pass: $errors errors, complete=$complete"
            fi
        else
            if [ "$errors" -ge 1 ]; then
                # Replay the counterexample for the model line of the failed assertion.
                local what
                what=$(cd "$dir" && spin -t "$@" "$model.pml" 2>&1 \
                    | sed -n 's/^spin: \(.*\), Error: \(.*\)$/\2 at \1/p' | head -1 || true)
                if grep -q 'acceptance cycle' "$out"; then
                    what="acceptance cycle: ltl drained fails"
                fi
                case "$(grep -m1 '^pan:1' "$out" || true)" in
                    *'nconsumed=='*) what="$what (no stranded mailbox)" ;;
                    *'holders=='*) what="$what (no double scheduling)" ;;
                    *'consumed['*) what="$what (exactly once, in order)" ;;
                    *'work==0'*) what="$what (no lost wake-up)" ;;
                    *'pending<='*) what="$what (parking.c's proof invariant)" ;;
                    *'stopped['*) what="$what (no message lost)" ;;
                    *'inside>0'*) what="$what (senders inside never below zero)" ;;
                    *'running['*) what="$what (one activation at a time)" ;;
                    *'handledUpTo+1'*) what="$what (per-sender order, each once)" ;;
                esac
                verdict=ok detail="fails as it must: ${what:-$(grep -m1 '^pan:1' "$out")}"
            else
                verdict=UNMET detail="expected a counterexample, spin found none"
            fi
        fi
    fi
    local states depth seconds
    states=$(awk '/states, stored/ { print $1; exit }' "$out" 2> /dev/null || true)
    depth=$(sed -n 's/.*depth reached \([0-9][0-9]*\).*/\1/p' "$out" 2> /dev/null | head -1 || true)
    seconds=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) sec.*/\1/p' "$out" 2> /dev/null | head -1 || true)
    [ "$verdict" = ok ] || detail="error: $detail"
    printf '%-5s %-16s %-4s %-8s %-46s states %9s  depth %4s  %6s s  %s\n' \
        "$verdict" "$model" "$expect" "$mode" "$label" "${states:-?}" "${depth:-?}" "${seconds:-?}" "$detail"
    [ "$verdict" = ok ]
}

printf '%-5s %-16s %-4s %-8s %-46s\n' result model want mode "spin -D defines (bounds, variant)"

# The scheduling right: producers x pushes, one worker (more workers only relabel who runs the
# turn: the right moves through the run queue), a concurrent spawn, hand-off turns.
check scheduling-right pass safety -DNPROD=2 -DNPUSH=2
check scheduling-right pass safety -DNPROD=3 -DNPUSH=1
check scheduling-right pass safety -DNPROD=2 -DNPUSH=3
check scheduling-right pass liveness -DNPROD=2 -DNPUSH=2
check scheduling-right pass liveness -DNPROD=3 -DNPUSH=1
check scheduling-right fail safety -DBROKEN_NO_RECHECK
check scheduling-right fail safety -DBROKEN_NO_FENCE
check scheduling-right fail safety -DBROKEN_NO_CAS
check scheduling-right fail liveness -DBROKEN_NO_RECHECK -DNO_QUIESCENT

# The event count: workers that park, threads that publish and notify.
check event-count pass safety -DNSLEEPER=2 -DNNOTIFIER=2 -DPOLLING=1
check event-count pass safety -DNSLEEPER=3 -DNNOTIFIER=1 -DPOLLING=1
check event-count pass safety -DNSLEEPER=2 -DNNOTIFIER=2 -DPOLLING=0
check event-count fail safety -DBROKEN_NO_RECHECK
check event-count fail safety -DBROKEN_NO_PASS_ON
check event-count fail safety -DBROKEN_SKIP_WHEN_PENDING -DPOLLING=0
check event-count fail safety -DBROKEN_LEAVE_KEEPS_PENDING

# The entity gate: senders and a directory that closes, waits for the claim, stops and reopens.
check entity-gate pass safety -DNSEND=2 -DNMSG=2 -DNCYCLE=2
check entity-gate pass safety -DNSEND=3 -DNMSG=2 -DNCYCLE=2
check entity-gate pass safety -DNSEND=2 -DNMSG=3 -DNCYCLE=3
check entity-gate fail safety -DBROKEN_CLOSE_CLAIMS
check entity-gate fail safety -DBROKEN_LEAVE_NO_CLAIM
check entity-gate fail safety -DBROKEN_OPEN_RESETS

# The handoff: three nodes, one identity moving from OLD to NEW, a sender (the third node, or
# OLD or NEW themselves), lines as FIFO channels; a join, a leave, and nodes adopting the new
# owners in any order.
check handoff pass safety -DJOIN -DNMSG=4
check handoff pass safety -DJOIN -DSENDER=0
check handoff pass safety -DJOIN -DSENDER=1
check handoff pass safety -DLEAVE -DNMSG=4
check handoff pass safety -DLEAVE -DSENDER=0
check handoff pass safety -DLEAVE -DSENDER=1
check handoff pass safety -DNMSG=3
check handoff fail safety -DLEAVE -DBROKEN_NO_PARKING
check handoff fail safety -DJOIN -DBROKEN_NO_HOLD
check handoff fail safety -DJOIN -DBROKEN_NO_MARKER_WAIT
check handoff fail safety -DJOIN -DBROKEN_ARRIVAL_ORDER
check handoff fail safety -DJOIN -DBROKEN_ACTIVE_BYPASS

wait || true
for dir in "$work"/*/; do
    cat "$dir/summary"
    grep -q '^ok ' "$dir/summary" || unmet=$((unmet + 1))
done
elapsed=$(($(date +%s) - started))
if [ "$unmet" -eq 0 ]; then
    echo "model-check: all $runs expectations met ($elapsed s)"
else
    echo "error: model-check: $unmet of $runs expectations NOT met ($elapsed s)"
    exit 1
fi
