"""The handler registry and the built-in task types' payload check."""

from __future__ import annotations

from typing import Any

import pytest

from tickwheel.errors import InvalidRequest
from tickwheel.worker.builtin import HttpCaller, builtin_app, builtins, check_http_payload
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App


async def async_handler(ctx: TaskContext, payload: Any) -> None:
    pass


def sync_handler(ctx: TaskContext, payload: Any) -> None:
    pass


class Handlers:
    @staticmethod
    def nested(ctx: TaskContext, payload: Any) -> None:
        pass


class AsyncCallable:
    async def __call__(self, ctx: TaskContext, payload: Any) -> None:
        pass


class SyncCallable:
    def __call__(self, ctx: TaskContext, payload: Any) -> None:
        pass


# --- registration ---------------------------------------------------------------


def test_async_function_registers_as_async() -> None:
    app = App()
    assert app.task("a")(async_handler) is async_handler
    kind = app.get("a")
    assert kind is not None
    assert (kind.name, kind.handler, kind.is_async) == ("a", async_handler, True)


def test_plain_function_registers_as_not_async() -> None:
    app = App()
    assert app.task("s")(sync_handler) is sync_handler
    kind = app.get("s")
    assert kind is not None
    assert (kind.handler, kind.is_async) == (sync_handler, False)


def test_object_with_async_call_registers_as_async() -> None:
    app = App()
    handler = AsyncCallable()
    app.task("obj")(handler)
    kind = app.get("obj")
    assert kind is not None
    assert (kind.handler, kind.is_async) == (handler, True)


def test_object_with_plain_call_registers_as_not_async() -> None:
    app = App()
    app.task("obj")(SyncCallable())
    kind = app.get("obj")
    assert kind is not None
    assert kind.is_async is False


def test_default_name_is_module_and_qualname() -> None:
    app = App()
    app.task()(sync_handler)
    app.task()(Handlers.nested)
    assert set(app.types) == {f"{__name__}.sync_handler", f"{__name__}.Handlers.nested"}
    assert app.types[f"{__name__}.sync_handler"].handler is sync_handler


def test_unknown_name_is_none() -> None:
    assert App().get("nope") is None


@pytest.mark.parametrize(
    "name",
    [
        "has space",
        "a/b",
        "tâche",
        "x" * 129,
        "bad\n",  # a trailing newline must not slip past the pattern's end anchor
        "\nbad",
    ],
    ids=repr,
)
def test_invalid_names_are_rejected(name: str) -> None:
    app = App()
    with pytest.raises(ValueError, match="must match"):
        app.task(name)(sync_handler)
    assert app.types == {}


def test_empty_name_is_rejected_not_replaced_by_the_default() -> None:
    app = App()
    with pytest.raises(ValueError, match="must match"):
        app.task("")(sync_handler)
    assert app.types == {}


def test_default_name_of_a_local_function_is_rejected() -> None:
    def local(ctx: TaskContext, payload: Any) -> None:
        pass

    with pytest.raises(ValueError, match="must match"):
        App().task()(local)


@pytest.mark.parametrize("name", ["x", "x" * 128, "emails.send:v2-beta_1", "A.B.C"])
def test_valid_names_are_accepted(name: str) -> None:
    app = App()
    app.task(name)(sync_handler)
    assert list(app.types) == [name]


def test_retry_defaults_are_kept() -> None:
    app = App()
    app.task("t", max_retries=5, retry_backoff=(2.0, 60.0), timeout_seconds=10.0)(sync_handler)
    kind = app.get("t")
    assert kind is not None
    assert (
        kind.max_retries,
        kind.backoff_base_seconds,
        kind.backoff_max_seconds,
        kind.timeout_seconds,
    ) == (5, 2.0, 60.0, 10.0)


def test_unset_retry_defaults_stay_unset() -> None:
    app = App()
    app.task("t")(sync_handler)
    kind = app.get("t")
    assert kind is not None
    assert (
        kind.max_retries,
        kind.backoff_base_seconds,
        kind.backoff_max_seconds,
        kind.timeout_seconds,
        kind.check_payload,
    ) == (None, None, None, None, None)


def test_zero_max_retries_is_kept_not_dropped() -> None:
    app = App()
    app.task("t", max_retries=0)(sync_handler)
    kind = app.get("t")
    assert kind is not None
    assert kind.max_retries == 0


def test_merged_combines_and_the_other_app_wins() -> None:
    first, second = App(), App()
    first.task("shared")(sync_handler)
    first.task("only-first")(sync_handler)
    second.task("shared")(async_handler)
    second.task("only-second")(async_handler)
    merged = first.merged(second)
    assert set(merged.types) == {"shared", "only-first", "only-second"}
    shared = merged.get("shared")
    assert shared is not None
    assert shared.handler is async_handler
    assert set(first.types) == {"shared", "only-first"}  # the originals are untouched
    assert set(second.types) == {"shared", "only-second"}
    merged.task("later")(sync_handler)
    assert "later" not in first.types and "later" not in second.types


def test_apps_do_not_share_registrations() -> None:
    first, second = App(), App()
    first.task("t")(sync_handler)
    assert second.types == {}


# --- built-in task types --------------------------------------------------------------


async def test_builtin_app_adds_http_to_noop() -> None:
    caller = HttpCaller()
    try:
        app = builtin_app(caller)
        http, noop = app.get("http"), app.get("noop")
        assert http is not None and noop is not None
        assert (http.handler, http.is_async) == (caller, True)
        assert http.check_payload is not None
        http.check_payload({"url": "https://example.com/hook"})  # the http payload check
        with pytest.raises(InvalidRequest):
            http.check_payload({"url": "ftp://example.com"})
        assert noop.is_async is True
        assert "http" not in builtins.types  # the shared registry is not modified
    finally:
        await caller.aclose()


GOOD = {"url": "https://example.com/hooks/1"}


@pytest.mark.parametrize(
    "payload",
    [
        GOOD,
        {"url": "http://localhost:8080/x?y=1"},
        {"url": "http://127.0.0.1/"},
        {"url": "https://[::1]:8443/"},
        {**GOOD, "method": "get"},
        {**GOOD, "method": "DELETE"},
        {**GOOD, "headers": {"Authorization": "Bearer x", "X-A": ""}},
        {**GOOD, "timeout_seconds": 3600},
        {**GOOD, "timeout_seconds": 0.001},
        {**GOOD, "body": {"any": ["json"]}},
    ],
)
def test_good_http_payload_is_accepted(payload: Any) -> None:
    check_http_payload(payload)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        pytest.param(None, "payload", id="none"),
        pytest.param("https://example.com", "payload", id="string"),
        pytest.param([GOOD], "payload", id="list"),
        pytest.param({}, "payload.url", id="url-missing"),
        pytest.param({"url": None}, "payload.url", id="url-null"),
        pytest.param({"url": 42}, "payload.url", id="url-number"),
        pytest.param({"url": "ftp://example.com/file"}, "payload.url", id="url-ftp"),
        pytest.param({"url": "file:///etc/passwd"}, "payload.url", id="url-file"),
        pytest.param({"url": "example.com/hook"}, "payload.url", id="url-no-scheme"),
        pytest.param({"url": "/relative/path"}, "payload.url", id="url-relative"),
        pytest.param({"url": "http:///no-host"}, "payload.url", id="url-no-host"),
        pytest.param({"url": "https://"}, "payload.url", id="url-scheme-only"),
        # Malformed: urlsplit raises a bare ValueError, which the API answers with a 500.
        pytest.param({"url": "http://[::1/"}, "payload.url", id="url-malformed-ipv6"),
        pytest.param({"url": "http://a:99999/"}, "payload.url", id="url-port-out-of-range"),
        pytest.param({"url": "http://a/\r\nX: y"}, "payload.url", id="url-control-chars"),
        pytest.param(
            {**GOOD, "headers": {"X-A": "1\r\nX-B: 2"}}, "payload.headers", id="header-crlf"
        ),
        pytest.param({**GOOD, "headers": {"X A": "1"}}, "payload.headers", id="header-bad-name"),
        pytest.param({**GOOD, "body": 5}, "payload.body", id="body-number"),
        pytest.param({**GOOD, "method": "TRACE"}, "payload.method", id="method-trace"),
        pytest.param({**GOOD, "method": ""}, "payload.method", id="method-empty"),
        pytest.param({**GOOD, "method": 5}, "payload.method", id="method-number"),
        pytest.param({**GOOD, "headers": ["X-A: 1"]}, "payload.headers", id="headers-list"),
        pytest.param({**GOOD, "headers": {"X-A": 1}}, "payload.headers", id="header-number"),
        pytest.param({**GOOD, "headers": {"X-A": None}}, "payload.headers", id="header-null"),
        pytest.param({**GOOD, "timeout_seconds": 0}, "payload.timeout_seconds", id="timeout-0"),
        pytest.param(
            {**GOOD, "timeout_seconds": -1}, "payload.timeout_seconds", id="timeout-negative"
        ),
        pytest.param(
            {**GOOD, "timeout_seconds": 3600.5}, "payload.timeout_seconds", id="timeout-too-long"
        ),
        pytest.param(
            {**GOOD, "timeout_seconds": "30"}, "payload.timeout_seconds", id="timeout-string"
        ),
        pytest.param(
            {**GOOD, "timeout_seconds": None}, "payload.timeout_seconds", id="timeout-null"
        ),
        pytest.param(
            {**GOOD, "timeout_seconds": float("nan")}, "payload.timeout_seconds", id="timeout-nan"
        ),
        pytest.param(
            {**GOOD, "timeout_seconds": float("inf")}, "payload.timeout_seconds", id="timeout-inf"
        ),
        # JSON true is not a number of seconds, though bool is a subclass of int.
        pytest.param(
            {**GOOD, "timeout_seconds": True}, "payload.timeout_seconds", id="timeout-true"
        ),
    ],
)
def test_bad_http_payload_names_its_field(payload: Any, field: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        check_http_payload(payload)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
