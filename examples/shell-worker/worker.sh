#!/usr/bin/env bash
# A Tickwheel worker in plain shell, through the worker protocol: curl for HTTP, and
# python3 only to read JSON. It pulls tasks of the queue "shell", greets the payload's
# name into $OUTPUT, and fails (for good) a task whose payload asks it to.
#
#   TICKWHEEL_URL=http://127.0.0.1:8700 OUTPUT=greetings.txt examples/shell-worker/worker.sh 10
#
# The argument is how many tasks to run before exiting (0, the default: forever).
set -euo pipefail

url=${TICKWHEEL_URL:-http://127.0.0.1:8700}
worker=${WORKER_ID:-shell-$$}
output=${OUTPUT:-/dev/stdout}
limit=${1:-0}
ran=0

field() { python3 -c "import json, sys; task = json.load(sys.stdin)['tasks'][0]; print($1)"; }
post() { curl -sf -X POST "$url$1" -H 'content-type: application/json' -d "$2"; }

# Send an attempt's result. 409: the fence is stale (this worker stalled past its lease
# and the task went on without it, or it was cancelled): nothing changed, and the worker
# says so. No answer or a 5xx: sent again a few times (a result sent again with the same
# fence gets the first answer, so a retry is safe).
result() {
  local answer status tries=0
  while true; do
    answer=$(curl -s -X POST "$url$1" -H 'content-type: application/json' -d "$2" \
      -w '\n%{http_code}') || true
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
  # Long poll: the answer comes as soon as a task is due, or empty after 10 s.
  claimed=$(post /api/worker/claim \
    "{\"worker_id\": \"$worker\", \"queues\": [\"shell\"], \"max_tasks\": 1, \"wait_seconds\": 10}")
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
