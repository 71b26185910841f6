#!/usr/bin/env bash
# Provision the testbed's SIMs into Open5GS's subscriber database with Open5GS's own tool.
#
#   open5gs_config/provision.sh [--db_uri=mongodb://localhost/open5gs] [--dry-run] SIMS.csv
#
# SIMS.csv: a header line "imsi,k,opc[,dnn]", then one SIM per line (see sims.example.csv).
# Each SIM is (re)added with
#   open5gs-dbctl add_ue_with_slice IMSI K OPC DNN SST SD
# on the slice and DNN of the gNB configs (srsran_agent/configs/gnb_*.yml), removing an
# existing entry first so the script can be re-run. open5gs-dbctl gives the session 5QI 9;
# the RTC bearer of the gNB configs is 5QI 7, so the script then sets the session's 5QI with
# mongosh (the client open5gs-dbctl itself runs). RTC_5QI=9 skips that step.
# --dry-run prints the commands instead of running them.
set -euo pipefail

# The testbed's core identity (tests/deploy/test_testbed_consistency.py checks these against
# open5gs_config/*.yaml and srsran_agent/configs/gnb_*.yml).
PLMN_MCC="001"
PLMN_MNC="01"
SST=1
SD="000001"
DEFAULT_DNN="rtc"
RTC_5QI="${RTC_5QI:-7}"

DB_URI=""
DRY_RUN=0
CSV=""
for arg in "$@"; do
  case "$arg" in
    --db_uri=*) DB_URI="$arg" ;;
    --dry-run) DRY_RUN=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) CSV="$arg" ;;
  esac
done
[[ -n "$CSV" && -r "$CSV" ]] || { echo "usage: $0 [--db_uri=URI] [--dry-run] SIMS.csv" >&2; exit 2; }

run() {
  if (( DRY_RUN )); then printf '%q ' "$@"; echo; else "$@"; fi
}
dbctl() {
  if [[ -n "$DB_URI" ]]; then run open5gs-dbctl "$DB_URI" "$@"; else run open5gs-dbctl "$@"; fi
}
MONGO_URI="${DB_URI#--db_uri=}"
MONGO_URI="${MONGO_URI:-mongodb://localhost/open5gs}"  # open5gs-dbctl's default
if (( ! DRY_RUN )); then
  command -v open5gs-dbctl >/dev/null || { echo "open5gs-dbctl not found (Open5GS misc/db/)" >&2; exit 1; }
fi

n=0
line_no=0
while IFS=, read -r imsi k opc dnn rest || [[ -n "${imsi:-}" ]]; do
  line_no=$((line_no + 1))
  imsi="${imsi//[[:space:]]/}"; k="${k//[[:space:]]/}"; opc="${opc//[[:space:]]/}"
  dnn="${dnn//[[:space:]]/}"
  [[ -z "$imsi" || "$imsi" == \#* ]] && continue
  if (( line_no == 1 )) && [[ "$imsi" == "imsi" ]]; then continue; fi
  dnn="${dnn:-$DEFAULT_DNN}"
  if ! [[ "$imsi" =~ ^[0-9]{15}$ ]]; then
    echo "line $line_no: IMSI must be 15 digits: $imsi" >&2; exit 1
  fi
  if [[ "${imsi:0:5}" != "${PLMN_MCC}${PLMN_MNC}" ]]; then
    echo "line $line_no: IMSI $imsi is not of PLMN ${PLMN_MCC}/${PLMN_MNC}" >&2; exit 1
  fi
  if ! [[ "$k" =~ ^[0-9a-fA-F]{32}$ && "$opc" =~ ^[0-9a-fA-F]{32}$ ]]; then
    echo "line $line_no: K and OPc must be 32 hex digits" >&2; exit 1
  fi
  if (( DRY_RUN )); then dbctl remove "$imsi"; else dbctl remove "$imsi" >/dev/null 2>&1 || true; fi
  dbctl add_ue_with_slice "$imsi" "$k" "$opc" "$dnn" "$SST" "$SD"
  if [[ "$RTC_5QI" != "9" ]]; then
    run mongosh --quiet --eval \
      "db.subscribers.updateOne({imsi: '$imsi'}, {\$set: {'slice.0.session.0.qos.index': NumberInt($RTC_5QI)}})" \
      "$MONGO_URI"
  fi
  n=$((n + 1))
done < "$CSV"
echo "provisioned $n SIM(s): PLMN ${PLMN_MCC}/${PLMN_MNC}, S-NSSAI ${SST}/${SD}, 5QI ${RTC_5QI}" >&2
