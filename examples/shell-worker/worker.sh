#!/usr/bin/env bash
# A Tickwheel worker in plain shell, through the worker protocol: curl for HTTP, and
# python3 only to read JSON. It pulls tasks of the queue "shell", greets the payload's
# name into $OUTPUT, and fails (for good) a task whose payload asks it to.
#
#   TICKWHEEL_URL=http://127.0.0.1:8700 OUTPUT=greetings.txt examples/shell-worker/worker.sh 10
#
# The argument is how many tasks to run before exiting (0, the default: forever). Once
# API tokens exist, give it one with the worker scope, as to the CLI: TICKWHEEL_TOKEN, or
# --token TOKEN before the count. A claim the API refuses (a 4xx: no token, a token
# without the scope) stops the worker with the API's answer on stderr.
set -euo pipefail

url=${TICKWHEEL_URL:-http://127.0.0.1:8700}
token=${TICKWHEEL_TOKEN:-}
if [ "${1:-}" = --token ]; then
  token=${2:?--token needs a value}
  shift 2
fi
worker=${WORKER_ID:-shell-$$}
output=${OUTPUT:-/dev/stdout}
limit=${1:-0}
ran=0
headers=(-H 'content-type: application/json')
if [ -n "$token" ]; then
  headers+=(-H "authorization: Bearer $token")
fi

field() { python3 -c "import json, sys; task = json.load(sys.stdin)['tasks'][0]; print($1)"; }

# POST $2 to $1: the answer's body, a newline, and its HTTP status (000: no answer).
post() { curl -s -X POST "$url$1" "${headers[@]}" -d "$2" -w '\n%{http_code}' || true; }

# Claim a task (long poll: the answer comes as soon as a task is due, or empty after
# 10 s). No answer or a 5xx: try again shortly. Any other refusal: say it and stop.
claim() {
  local answer status
  while true; do
    answer=$(post /api/worker/claim \
      "{\"worker_id\": \"$worker\", \"queues\": [\"shell\"], \"max_tasks\": 1, \"wait_seconds\": 10}")
    status=${answer##*$'\n'}
    case $status in
      200) echo "${answer%$'\n'*}"; return 0 ;;
      000 | 5??) sleep 1 ;;
      *) echo "claim refused (HTTP $status): ${answer%$'\n'*}" >&2; exit 1 ;;
    esac
  done
}

# Send an attempt's result. 409: the fence is stale (this worker stalled past its lease
# and the task went on without it, or it was cancelled): nothing changed, and the worker
# says so. No answer or a 5xx: sent again a few times (a result sent again with the same
# fence gets the first answer, so a retry is safe).
result() {
  local answer status tries=0
  while true; do
    answer=$(post "$1" "$2")
    status=${answer##*$'\n'}
    case $status in
      200) return 0 ;;
      409) echo "task $id: result refused, fence $fence is stale: ${answer%$'\n'*}" >&2; return 0 ;;
      000 | 5??) ;;
      *) echo "task $id: result not taken (HTTP $status): ${answer%$'\n'*}" >&2; return 0 ;;
    esac
    tries=$((tries + 1))
    if [ "$tries" -ge 8 ]; then
      echo "task $id: result not recorded after $tries tries (HTTP $status)" >&2
      return 0
    fi
    sleep 0.5
  done
}

while [ "$limit" -eq 0 ] || [ "$ran" -lt "$limit" ]; do
  claimed=$(claim)
  if [ "$(echo "$claimed" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["tasks"]))')" = 0 ]; then
    continue
  fi
  id=$(echo "$claimed" | field 'task["task_id"]')
  fence=$(echo "$claimed" | field 'task["fence"]')
  name=$(echo "$claimed" | field '(task["payload"] or {}).get("name", "world")')
  fail=$(echo "$claimed" | field '(task["payload"] or {}).get("fail", False)')

  # Every result presents the fence: if this worker stalled past its lease and the task
  # went to another worker, the answer is 409 and nothing changes.
  if [ "$fail" = "True" ]; then
    result "/api/worker/tasks/$id/fail" \
      "{\"fence\": $fence, \"error\": \"asked to fail\", \"retryable\": false}"
  else
    echo "hello $name" >> "$output"
    result "/api/worker/tasks/$id/complete" "{\"fence\": $fence}"
  fi
  ran=$((ran + 1))
done
