#!/bin/sh
# tier: check
# CLI suite: the client commands (version, push, push --file, info, jobs, job,
# retry, kill, discard, queue, groups, group, workflow, batch, batches) end to end against a real `rebound serve` on a free
# port in a temp dir: human and --json output, and the exit codes.
# Env: REBOUND_BIN (the binary). Exit 0 = pass.
set -u
bin=${REBOUND_BIN:-build/rebound}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rebound-cli.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

passed=0; failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; echo "  stdout: $(head -c 600 "$tmp/out")"; echo "  stderr: $(head -c 600 "$tmp/err")"; }

# run EXPECTED_EXIT ARGS...: runs rebound with --url, output in $tmp/out, $tmp/err
run() {
  want=$1; shift
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  if [ "$got" -eq "$want" ]; then ok; else bad "rebound $* exited $got, want $want"; fi
}
# has FILE TEXT: FILE contains TEXT (fixed string)
has() {
  if grep -qF -- "$2" "$tmp/$1"; then ok; else bad "$1 lacks '$2'"; fi
}
hasnt() {
  if grep -qF -- "$2" "$tmp/$1"; then bad "$1 has '$2'"; else ok; fi
}

printf '[server]\nlisten = "127.0.0.1:0"\nhttp_listen = "127.0.0.1:0"\n' >"$tmp/rebound.toml"
"$bin" serve --listen 127.0.0.1:0 --db "$tmp/rebound.db" --port-file "$tmp/port" \
  --config "$tmp/rebound.toml" >"$tmp/server.log" 2>&1 &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
  kill -0 "$pid" 2>/dev/null || { echo "cli: rebound serve exited early"; cat "$tmp/server.log"; exit 1; }
  i=$((i + 1)); [ "$i" -lt 300 ] || { echo "cli: no port file"; exit 1; }
  sleep 0.1
done
port=$(cat "$tmp/port")
U="tcp://127.0.0.1:$port"
export FAKTORY_URL="$U"   # the environment's URL is used when --url is absent

# --- usage errors: exit 2, one line naming the problem
run 2 push;                          has err "missing JOBTYPE"
run 2 push t '{"a":1}';              has err "must be a JSON array"
run 2 push t '[1' ;                  has err "must be a JSON array"
run 2 push t --policy 'ftl:0 5s';    has err "--policy"
run 2 push t --priority 12;          has err "--priority"
run 2 push t --retry -2;             has err "--retry"
run 2 policy simulate --config "$tmp/rebound.toml" --jobtype t --retry -2; has err "--retry: must be an integer >= -1, got '-2'"
run 2 push t --at tomorrowish;       has err "--at"
run 2 push t --bogus;                has err "unknown option '--bogus'"
run 2 jobs --state nope;             has err "--state 'nope'"
run 2 queue frobnicate default;      has err "unknown action"
run 2 job;                           has err "missing JID"
run 2 info --url 'http://x:1';       has err "scheme"

# --- server unreachable: exit 1, the message names the address
nobody="127.0.0.1:1"
run 1 info --url "tcp://$nobody";    has err "$nobody"
run 1 push t --url "tcp://$nobody";  has err "$nobody"

# --- push, info, jobs, job
run 0 push hello '[1,"two"]' --jid clijob-0001;  has out "pushed clijob-0001"
run 0 push hello --url "$U" --queue low --json;  has out '"jid":"'
run 0 push later '[]' --at 1h --jid clijob-later --policy 'ftl:3 5s 1m'
has out "clijob-later"
run 2 push hello --jid clijob-0001x --policy '{"nonsense": 1}'
run 0 info;                          has out "2 enqueued, 1 scheduled"; has out "low"
run 0 info --json;                   has out '"faktory"'; has out '"Scheduled":{"size":1}'

# --- one product version: `rebound version` and `rebound info` agree, and the
# Faktory version INFO carries for stock clients is labelled the protocol's
run 0 version
ver=$(sed -n 's/^rebound \([^ ]*\) (protocol: Faktory \([^ ]*\))$/\1/p' "$tmp/out")
proto=$(sed -n 's/^rebound [^ ]* (protocol: Faktory \([^ ]*\))$/\1/p' "$tmp/out")
if [ -n "$ver" ] && [ -n "$proto" ] && [ "$ver" != "$proto" ]; then ok; else bad "version line: $(cat "$tmp/out")"; fi
run 0 --version;                     has out "rebound $ver (protocol: Faktory $proto)"
run 0 info;                          has out "server     Rebound $ver at 127.0.0.1:$port,"
has out "protocol   Faktory $proto"; hasnt out "Rebound $proto"
run 0 info --json;                   has out "\"version\":\"$ver\""; has out "\"faktory_version\":\"$proto\""
run 0 jobs;                          has out "clijob-0001"; has out "clijob-later"; has out "3 shown of 3"
run 0 jobs --state scheduled;        has out "clijob-later"; hasnt out "clijob-0001"
run 0 jobs --queue low --json;       has out '"total":1'; hasnt out "clijob-0001"
run 0 jobs --jobtype later --state dead; has out "no jobs"
run 0 job clijob-later;              has out "scheduled"; has out "ftl:3 5s 1m"; has out "next run"
run 0 job clijob-0001 --json;        has out '"state":"enqueued"'; has out '"args":[1,"two"]'
run 1 job clijob-missing;            has err "not found"

# --- retry / kill / discard
run 1 kill clijob-missing;           has err "job 'clijob-missing' not found"
run 1 discard clijob-0001;           has err "is enqueued"
run 0 kill clijob-later;             has out "moved to dead (was scheduled)"
run 0 job clijob-later --json;       has out '"state":"dead"'
run 1 kill clijob-later;             has err "already dead"
run 0 retry clijob-later --json;     has out '"was":"dead"'; has out '"action":"requeue"'
run 0 job clijob-later;              has out "enqueued"
run 0 push later2 --at 10m --jid clijob-later2
run 0 discard clijob-later2;         has out "discarded (was scheduled)"
run 1 job clijob-later2

# --- queues
run 0 queue pause low default;       has out "queue low paused"; has out "queue default paused"
run 0 info;                          has out "  low      1  paused"; has out "  default  2  paused"
run 0 info --json;                   has out '"paused_queues":["default","low"]'
run 0 queue resume low --json;       has out '"action":"resume"'
run 0 info;                          has out "  low      1"; hasnt out "low      1  paused"
has out "  default  2  paused"
run 0 queue latency default;         has out "default"
run 0 queue remove low;              has out "queue low removed"
run 0 jobs --queue low --json;       has out '"total":0'

# --- bulk import: 5 good lines, 4 bad ones, blank lines skipped
cat >"$tmp/jobs.jsonl" <<'EOT'
{"jobtype":"bulk","args":[1],"queue":"bulk"}
{"jobtype":"bulk","args":[2],"queue":"bulk","jid":"bulk-jid-002"}
{"jobtype":"bulk","args":[3],"queue":"bulk"

{"jobtype":"bulk","args":[4],"queue":"bulk"}
[1,2,3]
{"jid":"bulk-nojobtype","args":[],"queue":"bulk"}
{"jobtype":"bulk","args":[6],"queue":"bulk"}
{"jobtype":"bulk","args":[7],"queue":"bulk","retry_policy":"ftl:0 5s","jid":"bulk-badpol"}
{"jobtype":"bulk","args":[8],"queue":"bulk"}
EOT
run 2 push --file "$tmp/jobs.jsonl"
has out "pushed 5 of 9"; has out "4 rejected"
has out "line 3: invalid JSON"; has out "line 6: not a JSON object"
has out "line 7 (jid bulk-nojobtype)"; has out "line 9 (jid bulk-badpol)"
has out "line 9 (jid bulk-badpol): job bulk-badpol: retry_policy: ftl: "
hasnt out "retry_policy: retry_policy"
run 0 jobs --queue bulk --json;      has out '"total":5'; has out "bulk-jid-002"
grep -v -e '^\[' -e nojobtype -e badpol -e '"args":\[3\],"queue":"bulk"$' "$tmp/jobs.jsonl" \
  | sed -e 's/"queue":"bulk"/"queue":"bulk2"/' -e 's/bulk-jid-002/bulk-jid-102/' >"$tmp/good.jsonl"
run 0 push --file - --json --batch 2 <"$tmp/good.jsonl"
has out '"pushed":5'; has out '"rejected":[]'
run 0 jobs --queue bulk2 --json;     has out '"total":5'
run 2 push --file "$tmp/does-not-exist.jsonl"; has err "cannot open"

# --- workflow: a diamond whose root is killed blocks its children (issue 15)
cat >"$tmp/wf.jsonl" <<'EOT'
{"jid":"cliwf-A000","jobtype":"extract","args":[],"queue":"wf","at":"2099-01-01T00:00:00Z"}
{"jid":"cliwf-B000","jobtype":"transform","args":[],"queue":"wf","custom":{"depends_on":["cliwf-A000"]}}
{"jid":"cliwf-C000","jobtype":"transform","args":[],"queue":"wf","custom":{"depends_on":["cliwf-A000"]}}
{"jid":"cliwf-D000","jobtype":"load","args":[],"queue":"wf","custom":{"depends_on":["cliwf-B000","cliwf-C000"]}}
{"jid":"cliwf-X000","jobtype":"notify","args":[],"queue":"wfx","custom":{"depends_on":["cliwf-A000"],"on_dep_failure":"cancel"}}
EOT
run 0 push --file "$tmp/wf.jsonl"
run 0 kill cliwf-A000
run 0 workflow cliwf-D000;           has out "workflow of cliwf-D000: 5 jobs, 5 edges"
has out "    0  ! cliwf-A000"; has out "dead"
has out "cliwf-B000                blocked    transform             0  cliwf-A000 (blocked by cliwf-A000)"
has out "    2    cliwf-D000                waiting    load                  0  cliwf-B000,cliwf-C000"
has out "! cliwf-A000 is dead and blocks its children: to unblock them, retry it (rebound retry cliwf-A000)"
run 0 workflow cliwf-B000 --json;    has out '"jid":"cliwf-B000","truncated":false'
has out '{"parent":"cliwf-A000","child":"cliwf-C000"}'; has out '"blocking":true'
run 0 workflow clijob-0001;          has out "1 jobs, 0 edges"; hasnt out "blocks its children"
# the held jobs in the everyday views (issue 25 item 7): listed, totalled, counted
run 0 jobs --queue wf;               has out "blocked    cliwf-B000"; has out "blocked    cliwf-C000"
has out "waiting    cliwf-D000"; has out "dead       cliwf-A000"; has out "4 shown of 4"
run 0 jobs --state blocked;          has out "cliwf-B000"; has out "cliwf-C000"; hasnt out "cliwf-D000"
has out "2 shown of 2"
run 0 jobs --state waiting --json;   has out '"total":1'; has out '"state":"waiting"'; has out "cliwf-D000"
run 0 info;                          has out ", 1 waiting, 2 blocked"
run 2 jobs --state held;             has err "must be enqueued, scheduled, working, retries, dead, waiting or blocked"
# what a held job waits for, and what blocks it (issue 25 item 12)
run 0 job cliwf-D000;                has out "state       waiting"; has out "waits for   cliwf-B000, cliwf-C000"
hasnt out "blocked by"
run 0 job cliwf-B000;                has out "state       blocked"; has out "waits for   cliwf-A000"
has out "blocked by  cliwf-A000 (dead: "
run 0 job cliwf-A000;                hasnt out "waits for"; hasnt out "blocked by"
# a job killed by its dependency never ran: 0 attempts in every view (issue 25 item 13)
run 0 job cliwf-X000;                has out "state       dead"; has out "attempts    0"
hasnt out "1 failed"; has out "    -  2"; has out "dead      -          dependency        DependencyFailed"
run 0 jobs --state dead --queue wfx; has out "dead       cliwf-X000                notify            wfx             0  "
run 0 workflow cliwf-X000;           has out "cliwf-X000                dead       notify                0  "
run 0 job cliwf-A000;                has out "attempts    0"
# the advice names the jobs that actually have to be retried, and a retry of
# the cancelled child waits for its dead parent (issue 25 item 8)
run 0 workflow cliwf-A000;           has out "! cliwf-X000 was killed when its parent cliwf-A000 died: to run it, retry cliwf-A000 and cliwf-X000 (rebound retry cliwf-A000; rebound retry cliwf-X000)"
run 0 job cliwf-X000;                has out "killed by   cliwf-A000 (its parent died: to run this job, retry cliwf-A000 and cliwf-X000 (rebound retry cliwf-A000; rebound retry cliwf-X000))"
run 0 job cliwf-X000 --json;         has out '"retry":["cliwf-A000","cliwf-X000"]'
run 0 job cliwf-B000;                has out "blocked by  cliwf-A000 (dead: to run this job, retry cliwf-A000 (rebound retry cliwf-A000))"
run 0 retry cliwf-X000;              has out "job cliwf-X000 blocked (was dead): it waits for its parents again (cliwf-A000)"
has out "blocked by cliwf-A000, which is dead: to run this job, retry cliwf-A000 (rebound retry cliwf-A000)"
run 0 job cliwf-X000 --json;         has out '"state":"blocked"'; has out '"blocked_by":"cliwf-A000"'
run 0 jobs --queue wfx --state enqueued; has out "no jobs"
run 1 workflow cliwf-nope;           has err "job 'cliwf-nope' not found"
run 2 workflow;                      has err "missing JID"
run 2 workflow a b;                  has err "unexpected argument 'b'"

# --- batch, batches: a batch half done (issue 15). The CLI makes no batch:
# BATCH NEW, COMMIT, FETCH and ACK go over the wire (bash's /dev/tcp).
wire() {
  bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
    read -r l <&3; printf "HELLO {\"v\":2}\r\n" >&3; read -r l <&3
    for c in "$@"; do
      printf "%s\r\n" "$c" >&3; read -r l <&3; l=${l%$(printf "\r")}
      case $l in \$-1) echo nil ;; \$*) read -r v <&3; echo "${v%$(printf "\r")}" ;; *) echo "$l" ;; esac
    done' "$port" "$@"
}
bid=$(wire 'BATCH NEW {"description":"cli batch","success":{"jid":"clib-succ-1","jobtype":"done","args":[],"queue":"clibcb"},"complete":{"jid":"clib-comp-1","jobtype":"comp","args":[],"queue":"clibcb"}}')
case $bid in b-*) ok ;; *) bad "BATCH NEW gave '$bid'" ;; esac
for i in 1 2 3 4; do
  run 0 push member '[]' --jid "clib-job-0$i" --queue clib --custom "{\"bid\":\"$bid\"}"
done
wire "BATCH COMMIT $bid" "FETCH clib" 'ACK {"jid":"clib-job-01"}' "FETCH clib" 'ACK {"jid":"clib-job-02"}' \
  "FETCH clib" 'FAIL {"jid":"clib-job-03","errtype":"E","message":"m"}' >"$tmp/wire"
has wire "+OK"; hasnt wire "-ERR"
run 0 batch "$bid"
has out "batch $bid"; has out "description  cli batch"
has out "counts       total 4, done 2, pending 2, failed 1"
has out "callbacks    complete -, success -"
has out "clib-job-03               retries    member            clib            1"
has out "clib-job-04               enqueued   member            clib            0"
hasnt out "clib-job-01"
run 0 batch "$bid" --json;          has out "\"bid\":\"$bid\""; has out '"members":[{"jid":"clib-job-03"'
run 0 batches;                      has out "$bid    open           4       2       1  -         -"; has out "cli batch"; has out "1 shown of 1"
run 0 batches --all --json;         has out '"state":"all","total":1'
run 1 batch b-nosuchbatch00;        has err "batch 'b-nosuchbatch00' not found"
run 2 batch;                        has err "missing BID"
run 2 batches --limit 0;            has err "--limit '0' must be 1-1000"
run 2 batches extra;                has err "unexpected argument 'extra'"

# --- every --json is one line of JSON (docs/cli.md), whatever the command:
# `rebound cron --json` once printed 43 lines of indented JSON (issue 25)
# json1 EXPECTED_EXIT ARGS...: the command's stdout is exactly one line, a
# JSON object or array
json1() {
  want=$1; shift
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  lines=$(wc -l <"$tmp/out")
  first=$(head -c 1 "$tmp/out")
  if [ "$got" -eq "$want" ] && [ "$lines" -eq 1 ] && { [ "$first" = "{" ] || [ "$first" = "[" ]; }; then
    ok
  else
    bad "rebound $*: exit $got (want $want), $lines lines, starts '$first'"
  fi
}
printf '[retry]\nfaktory = 5\n\n[[cron]]\nname = "nightly"\nschedule = "0 3 * * *"\n[cron.job]\ntype = "report"\n\n[[cron]]\nname = "hourly"\nschedule = "@hourly"\n[cron.job]\ntype = "tick"\n' >"$tmp/cron.toml"
json1 0 cron --json "$tmp/cron.toml"
json1 0 cron --json --count 3 --config "$tmp/cron.toml"
json1 0 config check --json "$tmp/cron.toml"
json1 0 policy check 'ftl:3 5s 1m' --json
json1 0 policy simulate 'ftl:3 5s 1m' --json
json1 0 policy simulate --config "$tmp/cron.toml" --jobtype report --json
json1 0 push one '[]' --json
printf '{"jobtype":"j1","args":[]}\n{"jobtype":"j1","args":[1]}\n' >"$tmp/json1.jsonl"
json1 0 push --file - --json <"$tmp/json1.jsonl"
json1 0 info --json
json1 0 jobs --json
json1 0 job clijob-0001 --json
json1 0 workflow cliwf-D000 --json
json1 0 batch "$bid" --json
json1 0 batches --json
run 0 push later3 --at 10m --jid clijob-later3
json1 0 kill clijob-later3 --json
json1 0 retry clijob-later3 --json
run 0 push later4 --at 10m --jid clijob-later4
json1 0 discard clijob-later4 --json
json1 0 queue pause bulk --json
json1 0 queue resume bulk --json
json1 0 queue latency bulk --json
json1 0 queue remove bulk --json
json1 0 backup --json "$tmp/backup-json.db"

# --- groups, group (flow control: GROUP and GROUPS)
run 0 push g '[]' --queue gq --jid cligroup-01 --custom '{"group":"acme"}'
run 0 push g '[]' --queue gq --jid cligroup-02 --custom '{"group":"acme"}'
run 0 groups;                        has out "QUEUE"; has out "gq"
run 0 groups gq;                     has out "GROUP"; has out "acme"; has out "active"
run 0 group set gq acme --concurrency 1 --rate 10 --period 1m; has out "group gq acme set"
run 0 group show gq acme;            has out "c=1 r=10/60s"; has out 'override: {"concurrency":1,"rate":10,"period":60}'
run 0 group pause gq acme --until 600 --reason "upstream 429"; has out "group gq acme paused"
run 0 groups gq --state paused;      has out "paused until"; has out "(upstream 429)"
run 0 job cligroup-01 --json;        has out '"held":{"by":"group","reason":"paused"'
run 0 group resume gq acme;          has out "group gq acme resumed"
run 0 group set gq acme --clear;     has out "override cleared"
run 2 group set gq acme --concurrency -1; has err "GROUP SET: concurrency must be an integer from 0 to 1000000 (0: no limit), got -1"
run 2 group set emials acme --clear; has err "GROUP SET: no queue 'emials'"
run 2 group pause gq acme --until soon; has err "GROUP PAUSE: until must be an RFC 3339 time or seconds from now, got 'soon'"
run 2 group pause gq acme;           has err "--until TIME|SECONDS is required"
run 2 group set gq acme;             has err "give limits"
run 2 group frob gq acme;            has err "unknown action 'frob'"
run 2 group show gq;                 has err "want QUEUE GROUP"
run 2 groups gq --state x;           has err "GROUPS: state must be all, active, held or paused, got 'x'"
run 1 groups --url "tcp://$nobody";  has err "$nobody"
json1 0 groups --json
json1 0 groups gq --json
json1 0 group show gq acme --json
json1 0 group set gq acme --concurrency 2 --json
json1 0 group pause gq acme --until 60 --json
json1 0 group resume gq acme --json

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
