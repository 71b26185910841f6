#!/usr/bin/env bash
# octoric's three xApps on O-RAN SC's own platform managers, without Kubernetes (issue #41).
#
#   deploy/oran_platform/build.sh            # once: builds submgr, rtmgr, appmgr, e2mgr
#   deploy/oran_platform/run.sh [SECONDS]    # default 90; Ctrl-C stops everything at any time
#
# Every component runs as a "pod": a network namespace of its own with one address on a
# private bridge (10.41.0.0/24), inside a private network, mount and PID namespace that only
# this script's processes see (nothing listens on the machine's interfaces, no port of the
# machine is taken, and when the script ends the kernel ends every process it started). Names
# are the Services' names of O-RAN SC's ric-dep charts and octoric's charts, in a hosts file
# that only these processes see; ports and configuration are the charts' defaults, rendered by
# helm from ric-dep's charts and octoric's (docs/deploy.md, "Run on O-RAN SC's own platform
# managers, by hand"). Logs and evidence: build/oran-platform/<time>/.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ORAN=${ORAN_DIR:-$(dirname "$REPO")/oran}  # build.sh's folder: sources beside the project, bin/
DURATION=${1:-90}
PY=$REPO/.venv/bin/python
HELM=$REPO/build/tools/helm

if [[ -z "${ORAN_PLATFORM_INNER:-}" ]]; then
    [[ $(id -u) == 0 ]] || { echo "run.sh: needs root (network namespaces)" >&2; exit 2; }
    for b in submgr rtmgr appmgr e2mgr; do
        [[ -x $ORAN/bin/$b ]] || { echo "run.sh: $ORAN/bin/$b missing: run deploy/oran_platform/build.sh" >&2; exit 2; }
    done
    [[ -x $HELM ]] || { echo "run.sh: $HELM missing: run make charts once" >&2; exit 2; }
    RUN=${RUN_DIR:-$REPO/build/oran-platform/$(date -u +%Y%m%d-%H%M%S)}
    mkdir -p "$RUN"
    echo "run.sh: logs in $RUN"
    # PID 1 of the new PID namespace is the inner script: when it ends, so does every process
    ORAN_PLATFORM_INNER=1 RUN=$RUN exec unshare --mount --net --pid --fork --mount-proc \
        "$0" "$DURATION"
fi

# ---- inside the namespaces -------------------------------------------------------------------
cd "$RUN"
mkdir -p logs pods charts
PIDS=()
stop_all() {
    trap - INT TERM EXIT
    echo "== stopping"
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[$i]}" 2>/dev/null || true; done
    sleep 2
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    echo "== stopped; logs in $RUN"
}
trap 'stop_all; exit 130' INT TERM
trap stop_all EXIT

mount -t tmpfs tmpfs /run
mkdir -p /run/netns
ip link set lo up
ip link add br41 type bridge
ip addr add 10.41.0.1/24 dev br41
ip link set br41 up

declare -A IP=(
    [dbaas]=10.41.0.2 [e2mgr]=10.41.0.3 [rtmgr]=10.41.0.4 [appmgr]=10.41.0.5 [submgr]=10.41.0.6
    [e2term]=10.41.0.7 [a1mediator]=10.41.0.8 [gnb]=10.41.0.9
    [occ]=10.41.0.21 [handover]=10.41.0.22 [octopus]=10.41.0.23 [abw-listener]=10.41.0.24
)
n=0
for pod in "${!IP[@]}"; do
    n=$((n + 1))
    ip netns add "$pod"
    ip link add "veth$n" type veth peer name "eth$n"
    ip link set "eth$n" netns "$pod"
    ip link set "veth$n" master br41 up
    ip netns exec "$pod" sh -c "ip link set lo up && ip link set eth$n name eth0 &&
        ip addr add ${IP[$pod]}/24 dev eth0 && ip link set eth0 up"
done

# Kubernetes' DNS, as the charts name the Services (ric-dep's ric-common and octoric's _xapp)
cat > hosts <<EOF
127.0.0.1 localhost
${IP[dbaas]} service-ricplt-dbaas-tcp.ricplt service-ricplt-dbaas-tcp
${IP[e2mgr]} service-ricplt-e2mgr-rmr.ricplt service-ricplt-e2mgr-http service-ricplt-e2mgr-http.ricplt
${IP[rtmgr]} service-ricplt-rtmgr-rmr.ricplt service-ricplt-rtmgr-http service-ricplt-rtmgr-http.ricplt rtmgr
${IP[appmgr]} service-ricplt-appmgr-http service-ricplt-appmgr-http.ricplt service-ricplt-appmgr-rmr.ricplt
${IP[submgr]} service-ricplt-submgr-rmr.ricplt service-ricplt-submgr-http service-ricplt-submgr-http.ricplt
${IP[e2term]} service-ricplt-e2term-rmr-alpha.ricplt service-ricplt-e2term-sctp-alpha.ricplt service-ricplt-e2term-prometheus-alpha.ricplt
${IP[a1mediator]} service-ricplt-a1mediator-rmr.ricplt service-ricplt-a1mediator-http.ricplt
${IP[gnb]} gnb
${IP[occ]} service-ricxapp-occ-rmr.ricxapp service-ricxapp-occ-http.ricxapp
${IP[handover]} service-ricxapp-handover-rmr.ricxapp service-ricxapp-handover-http.ricxapp
${IP[octopus]} service-ricxapp-octopus-rmr.ricxapp service-ricxapp-octopus-http.ricxapp
${IP[abw-listener]} service-ricxapp-abw-listener-rmr.ricxapp service-ricxapp-abw-listener-http.ricxapp
EOF
mount --bind "$RUN/hosts" /etc/hosts

BASE_ENV=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8
    "LD_LIBRARY_PATH=$REPO/build/lib:$ORAN/e2ap-lib")
# start POD LOG ENVFILE CWD CMD...: one process in its pod, the pod's environment only
start() {
    local pod=$1 logf=$2 envf=$3 cwd=$4
    shift 4
    local env=("${BASE_ENV[@]}")
    if [[ -n $envf ]]; then mapfile -t extra < "$envf"; env+=("${extra[@]}"); fi
    (cd "$cwd" && exec ip netns exec "$pod" env -i "${env[@]}" "$@") > "$logf" 2>&1 &
    PIDS+=($!)
    echo "   $pod: $* (pid $!, log $logf)"
}
in_pod() { local pod=$1; shift; ip netns exec "$pod" "$@"; }
curl_() { curl -sS --noproxy '*' --max-time 5 "$@"; }
wait_http() {  # URL [seconds]
    for _ in $(seq 1 "${2:-60}"); do curl_ -o /dev/null "$1" 2>/dev/null && return 0; sleep 1; done
    echo "   (no answer from $1)"; return 1
}

# ---- the platform's configuration, rendered by helm from ric-dep's charts ----------------------
echo "== rendering ric-dep's charts (helm template, default values)"
mkdir -p charts
for c in rtmgr submgr e2mgr appmgr; do
    rm -rf "charts/$c"; cp -r "$ORAN/ric-dep/helm/$c" charts/
    mkdir -p "charts/$c/charts"; cp -r "$ORAN/ric-dep/ric-common/Common-Template/helm/ric-common" "charts/$c/charts/"
    rm -f "charts/$c/requirements.yaml"
    "$HELM" template "r-$c" "charts/$c" -n ricplt > "charts/$c.yaml"
    mkdir -p "pods/$c"
    "$PY" -m octoric.deploy.oran_platform.pods platform "charts/$c.yaml" --pod-ip "${IP[$c]}" \
        --out "pods/$c" --env DBAAS_SERVICE_HOST=service-ricplt-dbaas-tcp.ricplt \
        --env DBAAS_SERVICE_PORT=6379 > "pods/$c.json"
done
# the operator's step 3 of docs/deploy.md: octoric's message types in rtmgr's list
RTCFG=pods/rtmgr/root/cfg/rtmgr-config.yaml
sed -i 's/^\(\s*\)"messagetypes": \[/&\n\1   "OCTORIC_ABW_REPORT=30500", "OCTORIC_HO_EVENT=30501", "OCTORIC_OCTOPUS_STATUS=30502",/' "$RTCFG"
# ric-dep's list names one type "RIC_E2NODE_CONFIG_UPDATE_ACK==12071": rtmgr then writes a route
# record without a message type ("mse|,<e2mgr>|-1|<e2term>") into every table; RMR 4.9 skips
# that record, as octoric's RMR now does too (it refused the whole table). The operator's fix:
sed -i 's/"RIC_E2NODE_CONFIG_UPDATE_ACK==12071"/"RIC_E2NODE_CONFIG_UPDATE_ACK=12071"/' "$RTCFG"
grep -q OCTORIC_ABW_REPORT "$RTCFG" || { echo "run.sh: could not add octoric's types to $RTCFG" >&2; exit 1; }
cp "$ORAN/rtmgr/uta_rtg_ric.rt" pods/rtmgr/root/uta_rtg_ric.rt
sed -i "s#^RMR_SEED_RT=/uta_rtg_ric.rt#RMR_SEED_RT=$RUN/pods/rtmgr/root/uta_rtg_ric.rt#" pods/rtmgr/env
echo "RMR_SEED_RT=router.txt" >> pods/e2mgr/env  # the e2mgr image's ENV (WORKDIR /opt/E2Manager)

# ---- the platform -------------------------------------------------------------------------------
echo "== starting the platform"
start dbaas logs/dbaas.log "" "$RUN" redis-server --bind 0.0.0.0 --port 6379 --save "" \
    --appendonly no --protected-mode no
sleep 1
start appmgr logs/appmgr.log pods/appmgr/env "$RUN/pods/appmgr/root" \
    "$ORAN/bin/appmgr" -f "$RUN/pods/appmgr/root/opt/ric/config/appmgr.yaml"
start e2mgr logs/e2mgr.log pods/e2mgr/env "$RUN/pods/e2mgr/root/opt/E2Manager" \
    "$ORAN/bin/e2mgr" -port= -f "$RUN/pods/e2mgr/root/etc/config/log-level.yaml"
wait_http "http://${IP[appmgr]}:8080/ric/v1/health/ready" 30
start rtmgr logs/rtmgr.log pods/rtmgr/env "$RUN/pods/rtmgr/root" \
    "$ORAN/bin/rtmgr" -f "$RUN/$RTCFG"
start submgr logs/submgr.log pods/submgr/env "$RUN/pods/submgr/root" \
    "$ORAN/bin/submgr" -f "$RUN/pods/submgr/root/cfg/submgr-config.yaml"
wait_http "http://${IP[rtmgr]}:3800/ric/v1/health" 60 || true

echo "== octoric's e2term and A1 stand-ins, a simulated gNB"
start e2term logs/e2term.log "" "$RUN" "$PY" -m octoric.deploy.oran_platform.standins e2term \
    --redis service-ricplt-dbaas-tcp.ricplt:6379 --rmr-port 38000 --route-port 4561 \
    --src-id service-ricplt-e2term-rmr-alpha.ricplt --address "${IP[e2term]}" --e2-port 36422 \
    --e2mgr service-ricplt-e2mgr-rmr.ricplt:3801 \
    --rtmgr http://service-ricplt-rtmgr-http:3800/ric/v1/handles
start a1mediator logs/a1mediator.log "" "$RUN" "$PY" -m octoric.deploy.oran_platform.standins a1 \
    --redis service-ricplt-dbaas-tcp.ricplt:6379 --rmr-port 4562 --route-port 4561 \
    --src-id service-ricplt-a1mediator-rmr.ricplt --http-port 10000
sleep 3
start gnb logs/gnb.log "" "$RUN" "$PY" -m octoric.cli sim run --live --quiet --scenario hsr \
    --duration $((DURATION + 60)) --svc temporal --octopus-header \
    --ric-e2 "${IP[e2term]}:36422" --e2-transport tcp --status-file "$RUN/gnb-status.json" \
    --handover-log "$RUN/gnb-handovers.jsonl"

echo "== the xApps, as their charts configure them (helm template charts/<name>)"
for x in occ handover octopus; do
    "$PY" -m octoric.deploy.oran_platform.pods "$x" --pod-ip "${IP[$x]}" --out "pods/$x" > "pods/$x.json"
    printf 'PYTHONUNBUFFERED=1\nOCTORIC_LOG_FORMAT=json\n' >> "pods/$x/env"  # the image's ENV
    mapfile -t argv < "pods/$x/args"
    argv[0]=$PY
    start "$x" "logs/$x.log" "pods/$x/env" "$RUN/pods/$x" "${argv[@]}"
done
# a consumer of OCC's 30500 reports (examples/abw_listener.py), registered the same way
mkdir -p pods/abw-listener
"$PY" "$REPO/examples/abw_listener.py" --write-descriptor --rmr-port 4560 > pods/abw-listener/config-file.json
cat > pods/abw-listener/env <<EOF
HOSTNAME=abw-listener
CONFIG_FILE=$RUN/pods/abw-listener/config-file.json
RMR_SRC_ID=service-ricxapp-abw-listener-rmr.ricxapp
RMR_RTG_SVC=4561
RMR_SEED_RT=$RUN/pods/abw-listener/uta-rtg.rt
DBAAS_SERVICE_HOST=service-ricplt-dbaas-tcp.ricplt
DBAAS_SERVICE_PORT=6379
SERVICE_RICXAPP_ABW_LISTENER_HTTP_PORT=tcp://${IP[abw-listener]}:8100
SERVICE_RICXAPP_ABW_LISTENER_RMR_PORT=tcp://${IP[abw-listener]}:4560
PYTHONUNBUFFERED=1
EOF
printf 'newrt|start\nnewrt|end\n' > pods/abw-listener/uta-rtg.rt  # as the charts give theirs
start abw-listener logs/abw-listener.log pods/abw-listener/env "$RUN/pods/abw-listener" \
    "$PY" "$REPO/examples/abw_listener.py" --rmr-port 4560 --http-port 8100

echo "== waiting for registrations, subscriptions and routes"
sleep 25
curl_ "http://${IP[appmgr]}:8080/ric/v1/xapps" > evidence-appmgr-xapps.json || true
echo "   appmgr /ric/v1/xapps: $(cat evidence-appmgr-xapps.json)"

echo "== A1: policy type 30500 and a policy (docs/deploy.md step 4, docs/octopus.md)"
"$PY" -c 'import json; from octoric.contracts.octopus_policy import policy_type; print(json.dumps(policy_type()))' > pt.json
A1=http://${IP[a1mediator]}:10000/A1-P/v2/policytypes/30500
curl_ -X PUT -H 'Content-Type: application/json' --data @pt.json "$A1" -w ' -> %{http_code}\n' | tee evidence-a1.txt
curl_ -X PUT -H 'Content-Type: application/json' -d '{"scope": {"ues": [1000, 1001]}, "enable": true}' "$A1/policies/rtc" \
    -w ' -> %{http_code}\n' | tee -a evidence-a1.txt

echo "== running $DURATION s"
sleep "$DURATION"

echo "== collecting evidence"
{
    echo "# appmgr GET /ric/v1/xapps"; curl_ "http://${IP[appmgr]}:8080/ric/v1/xapps"; echo
    echo "# submgr GET /ric/v1/subscriptions"; curl_ "http://${IP[submgr]}:8088/ric/v1/subscriptions"; echo
    echo "# rtmgr GET /ric/v1/getdebuginfo"; curl_ "http://${IP[rtmgr]}:3800/ric/v1/getdebuginfo"; echo
    echo "# e2mgr GET /v1/nodeb/states"; curl_ "http://${IP[e2mgr]}:3800/v1/nodeb/states"; echo
    echo "# e2mgr GET /v1/nodeb/gnb_001_001_00019b"; curl_ "http://${IP[e2mgr]}:3800/v1/nodeb/gnb_001_001_00019b"; echo
    echo "# e2mgr GET /v1/e2t/list"; curl_ "http://${IP[e2mgr]}:3800/v1/e2t/list"; echo
    echo "# A1 policy status"; curl_ "$A1/policies/rtc/status"; echo
    for x in occ handover octopus; do
        port=$(sed -n 's/^SERVICE_RICXAPP_.*_HTTP_SERVICE_PORT=//p' "pods/$x/env")
        echo "# $x GET /$x/v1/status"; curl_ "http://${IP[$x]}:$port/$x/v1/status"; echo
        echo "# $x GET /metrics (octoric_ lines)"; curl_ "http://${IP[$x]}:$port/metrics" | grep '^octoric_' | head -40
    done
} > evidence.txt 2>&1 || true
cp "$RUN/pods/rtmgr/root/db/rt.json" evidence-rtmgr-rt.json 2>/dev/null || true
echo "   evidence in $RUN/evidence.txt"
