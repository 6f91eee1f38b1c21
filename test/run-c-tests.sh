#!/usr/bin/env bash
# run-c-tests.sh — run the C unit and transport tests (build/test/unit/*,
# build/test/integ/*) and summarise their TAP output.
#
#   test/run-c-tests.sh              every test binary
#   test/run-c-tests.sh test_proto   only the named ones
#
# Run from anywhere (it changes to the repository root, where the tests
# find build/dmindex-memnode); build first with `make standalone`.  Each
# binary gets a timeout (C_TEST_TIMEOUT seconds, default 900: the longest, the tree concurrency test, takes 3-5 min on an idle 2-core machine).  A crash, a
# timeout, a non-zero exit without a failed test, or a missing or wrong
# "1..N" plan counts as one failure.  Output of each binary is kept in
# build/test/logs/NAME.tap (stdout) and NAME.log (stderr: memnode logs).
# The binaries in AUTH_VARIANTS run a second time with DM_TEST_AUTH=1,
# against a memnode with --auth-file (shown as NAME+auth; test/lib/testauth.h);
# those in AUTH_UCX_VARIANTS once more over ucx (UCX_TLS=posix) with it
# (NAME+ucx-posix-auth: the UCX attach after the authenticated handshake).
# The binaries in UCX_VARIANTS (the cheap ones; with DM_TEST_UCX_ALL=1 also
# those in UCX_VARIANTS_ALL) run twice more over the ucx transport, with
# DM_TEST_TRANSPORT=ucx and UCX_TLS=tcp (NAME+ucx-tcp: get and atomics
# emulated by the memnode's worker) and UCX_TLS=posix (NAME+ucx-posix:
# shared memory; test/lib/testutil.h test_ucx).
# The binaries in OFFLOAD_VARIANTS run a second time with TREE_OFFLOAD=always
# (shown as NAME+offload): the tree tests with the memnode's offload
# executor doing the operations (test/lib/testutil.h test_tree_offload);
# they run at TREE_SCALE=25 (a quarter of the operations) unless
# DM_TEST_OFFLOAD_LONG=1, which runs them whole and adds the long ones (the
# model test, minutes).
# The binaries in HOP_VARIANTS run once more with TREE_LEAF_FORMAT=hopscotch
# (shown as NAME+hop): their trees get hopscotch leaves (docs/design.md
# §5.1; test/lib/testutil.h test_tree_leaf_opts); those also in
# OFFLOAD_VARIANTS once more with both (NAME+offload-hop).  DM_TEST_HOP_ALL=1
# adds the long ones (test_tree_reclaim, minutes).
# The binaries in VAR_VARIANTS run once more with TREE_KEY_FORMAT=var (shown
# as NAME+var): their trees hold variable-length keys (docs/design.md §5.2;
# test/lib/testkeys.h: each test key as a prefix-free byte string).
# DM_TEST_VAR_ALL=1 adds those of VAR_VARIANTS_ALL (longer) and runs
# test_tree_reclaim+var whole (its section 4, the faulty reclaimer, adds 95 s).
# C_TEST_SHM_ONLY="NAME[+variant] ..." runs those over shm only
# (TREE_BACKEND=shm; the tree tests that take it: test_tree_model,
# test_tree_faults, test_tree_concurrency, test_tree_reclaim): run-tests.sh
# sets it for the sanitized run, whose long variants' tcp halves repeat what
# the unsanitized run and the sanitized FIXED8 run check over tcp.
# test_tree_reclaim's section 7 runs in a short form (a binary search over
# the reviver's steps, every 10th word of its batch, ~12 s);
# RECLAIM_TORN_STRIDE=1 runs every step and word (~95 s).
# BUILD_DIR (default build) runs the binaries of another build directory,
# with its memnode: the sanitized build (Makefile: SANITIZE).
# Exit status 0 iff everything passed.
set -u

cd "$(dirname "$0")/.." || exit 2
timeout_s=${C_TEST_TIMEOUT:-900}
BUILD_DIR=${BUILD_DIR:-build}
export DM_MEMNODE=${DM_MEMNODE:-$BUILD_DIR/dmindex-memnode}
AUTH_VARIANTS="test_robust"
# ... and over ucx with authentication (the UCX attach comes after the handshake)
AUTH_UCX_VARIANTS="test_robust test_ucx_rpc"
UCX_VARIANTS="test_rpc test_transport_sizes test_failure test_robust test_offload test_ucx_rpc"
UCX_VARIANTS_ALL="test_atomic test_fence test_tree_model test_tree_faults"
[ "${DM_TEST_UCX_ALL:-}" = 1 ] && UCX_VARIANTS="$UCX_VARIANTS $UCX_VARIANTS_ALL"
OFFLOAD_VARIANTS="test_tree_concurrency"
HOP_VARIANTS="test_tree_model test_tree_concurrency test_tree_scale test_tree_cache test_tree_redo test_tree_replica test_offload test_tree_faults test_offload_walk"
[ "${DM_TEST_HOP_ALL:-}" = 1 ] && HOP_VARIANTS="$HOP_VARIANTS test_tree_reclaim"
# the tree tests parameterised with VAR keys (docs/design.md §9, issue 16 step 2):
# beyond test_tree_concurrency they add ~157 s (test_tree_model and test_tree_cache partly FIXED8 only, test_tree_scale at 10%)
VAR_VARIANTS="test_tree_concurrency test_tree_model test_tree_cache test_tree_faults test_tree_redo test_tree_reclaim test_tree_scale test_tree_replica"
VAR_VARIANTS_ALL=""
[ "${DM_TEST_VAR_ALL:-}" = 1 ] && VAR_VARIANTS="$VAR_VARIANTS $VAR_VARIANTS_ALL"
offload_scale=25
if [ -n "${DM_TEST_OFFLOAD_LONG:-}" ] && [ "${DM_TEST_OFFLOAD_LONG}" != 0 ]; then
	OFFLOAD_VARIANTS="$OFFLOAD_VARIANTS test_tree_model"
	offload_scale=${TREE_SCALE:-100}
fi
logdir=$BUILD_DIR/test/logs
mkdir -p "$logdir"

bins=()
for f in "$BUILD_DIR"/test/unit/* "$BUILD_DIR"/test/integ/*; do
	if [ ! -f "$f" ] || [ ! -x "$f" ]; then continue; fi
	if [ $# -gt 0 ]; then
		want=0
		for a in "$@"; do [ "$(basename "$f")" = "$a" ] && want=1; done
		[ $want = 1 ] || continue
	fi
	bins+=("$f")
	case " $AUTH_VARIANTS " in *" $(basename "$f") "*) bins+=("$f@auth") ;; esac
	case " $AUTH_UCX_VARIANTS " in *" $(basename "$f") "*) bins+=("$f@ucx-posix-auth") ;; esac
	case " $UCX_VARIANTS " in *" $(basename "$f") "*) bins+=("$f@ucx-tcp" "$f@ucx-posix") ;; esac
	case " $OFFLOAD_VARIANTS " in *" $(basename "$f") "*) bins+=("$f@offload") ;; esac
	case " $HOP_VARIANTS " in *" $(basename "$f") "*) bins+=("$f@hop") ;; esac
	case " $VAR_VARIANTS " in *" $(basename "$f") "*) bins+=("$f@var") ;; esac
	case " $HOP_VARIANTS " in *" $(basename "$f") "*)
		case " $OFFLOAD_VARIANTS " in *" $(basename "$f") "*) bins+=("$f@offload-hop") ;; esac ;;
	esac
done
if [ ${#bins[@]} -eq 0 ]; then
	echo "run-c-tests: no test binaries found under $BUILD_DIR/test (run \`make standalone\` first)" >&2
	echo "C tests: 0 passed, 1 failed"
	exit 1
fi

total_pass=0
total_fail=0
failed_bins=()
for entry in "${bins[@]}"; do
	bin=${entry%@*}
	name=$(basename "$bin")
	auth=
	transport=
	tls=${UCX_TLS:-}
	offload=
	leaf=
	keyfmt=
	case "$entry" in
		*@auth) name="$name+auth"; auth=1 ;;
		*@ucx-*-auth) name="$name+${entry##*@}"; transport=ucx; tls=${entry##*@ucx-}; tls=${tls%-auth}; auth=1 ;;
		*@ucx-*) name="$name+${entry##*@}"; transport=ucx; tls=${entry##*@ucx-} ;;
		*@offload) name="$name+offload"; offload=always ;;
		*@hop) name="$name+hop"; leaf=hopscotch ;;
		*@offload-hop) name="$name+offload-hop"; offload=always; leaf=hopscotch ;;
		*@var) name="$name+var"; keyfmt=var ;;
	esac
	tap="$logdir/$name.tap"
	log="$logdir/$name.log"
	start=$(date +%s.%N)
	# -k: if the test ignores SIGTERM, SIGKILL it 10 s later (its memnodes
	# die with it: they are started with PR_SET_PDEATHSIG)
	scale=${TREE_SCALE:-}
	[ -n "$offload" ] && scale=$offload_scale
	backend=${TREE_BACKEND:-}
	case " ${C_TEST_SHM_ONLY:-} " in *" $name "*) backend=shm ;; esac
	DM_TEST_AUTH=$auth DM_TEST_TRANSPORT=$transport TREE_OFFLOAD=$offload TREE_SCALE=$scale \
		TREE_LEAF_FORMAT=$leaf TREE_KEY_FORMAT=$keyfmt env ${tls:+UCX_TLS=$tls} ${backend:+TREE_BACKEND=$backend} \
		timeout -k 10 "$timeout_s" "$bin" >"$tap" 2>"$log" </dev/null
	rc=$?
	secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

	pass=$(grep -cE '^ok [0-9]+' "$tap")
	fail=$(grep -cE '^not ok [0-9]+' "$tap")
	plan=$(grep -E '^1\.\.[0-9]+$' "$tap" | tail -n 1 | cut -d. -f3)
	problem=""
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		problem="timed out after ${timeout_s}s"
	elif [ $rc -gt 128 ]; then
		problem="killed by signal $((rc - 128))"
	elif [ -z "$plan" ]; then
		problem="no TAP plan (exit status $rc)"
	elif [ "$plan" -ne $((pass + fail)) ]; then
		problem="plan says $plan tests, ran $((pass + fail))"
	elif [ $rc -ne 0 ] && [ "$fail" -eq 0 ]; then
		problem="exit status $rc with no failed test"
	fi
	if [ -n "$problem" ]; then
		fail=$((fail + 1))
	fi
	total_pass=$((total_pass + pass))
	total_fail=$((total_fail + fail))

	if [ "$fail" -eq 0 ]; then
		printf '%-22s ok      %4d passed                (%ss)\n' "$name" "$pass" "$secs"
	else
		failed_bins+=("$name")
		printf '%-22s FAILED  %4d passed, %3d failed   (%ss)%s\n' "$name" "$pass" "$fail" "$secs" \
			"${problem:+ — $problem}"
		# the failed assertions with their diagnostics
		awk '/^not ok /{show=1; print "    " $0; next} /^#/{ if (show) print "    " $0; next} {show=0}' "$tap" | head -n 60
		if [ -s "$log" ]; then
			echo "    --- last lines of stderr ($log):"
			tail -n 15 "$log" | sed 's/^/    /'
		fi
	fi
done

echo
[ ${#failed_bins[@]} -gt 0 ] && echo "failed: ${failed_bins[*]} (logs in $logdir/)"
echo "C tests: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
