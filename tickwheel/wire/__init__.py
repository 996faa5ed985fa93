"""The shapes that cross the wire, below both the API and the client.

- `answers`: the API's answers as the client decodes them (msgspec, light).
- `bodies`: submit options (`SubmitOptions`) as the JSON body of `POST /api/tasks`,
  written by the client, the workflow builder and the embedded node alike.
- `requests`: a task body, however it arrived (validated by the API, or written by the
  embedded node), as the engine's `TaskRequest`, with its type's default options.

Nothing here imports the API, the engine or the storage; a program that only uses the
client loads `answers` and `bodies`, not `requests`.
"""
