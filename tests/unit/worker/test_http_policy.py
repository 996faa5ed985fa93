"""Allow and deny lists of http task targets."""

from __future__ import annotations

import pytest

from tickwheel.worker.http_policy import HttpPolicy


def test_no_lists_allow_everything() -> None:
    policy = HttpPolicy.parse()
    assert policy.refusal("10.0.0.1") is None
    assert policy.refusal("internal.local", ["127.0.0.1"]) is None


@pytest.mark.parametrize(
    ("host", "addresses", "refused"),
    [
        ("127.0.0.1", None, True),  # a literal address in a denied network
        ("[::1]", None, True),
        ("metadata.internal", None, True),  # a denied name
        ("x.corp.example", None, True),  # a denied subdomain
        ("api.example.com", None, False),  # a name: networks wait for resolution
        ("api.example.com", ["10.1.2.3"], True),  # ... which points into a denied network
        ("api.example.com", ["93.184.216.34"], False),
    ],
)
def test_deny_list(host: str, addresses: list[str] | None, refused: bool) -> None:
    policy = HttpPolicy.parse(
        deny="127.0.0.0/8, ::1, 10.0.0.0/8, metadata.internal, *.corp.example"
    )
    assert (policy.refusal(host, addresses) is not None) is refused


@pytest.mark.parametrize(
    ("host", "addresses", "refused"),
    [
        ("hooks.example.com", None, False),
        ("a.partner.io", None, False),
        # An unresolved name waits for its addresses, since the list holds a network:
        ("elsewhere.com", None, False),
        ("elsewhere.com", ["192.168.5.5"], False),
        ("elsewhere.com", ["8.8.8.8"], True),
        ("192.168.5.5", None, False),
    ],
)
def test_allow_list(host: str, addresses: list[str] | None, refused: bool) -> None:
    policy = HttpPolicy.parse(allow="hooks.example.com,*.partner.io,192.168.0.0/16")
    assert (policy.refusal(host, addresses) is not None) is refused


def test_an_allow_list_of_names_refuses_other_names_at_once() -> None:
    policy = HttpPolicy.parse(allow="hooks.example.com")
    assert policy.refusal("hooks.example.com") is None
    assert policy.refusal("elsewhere.com") is not None


def test_deny_wins_over_allow() -> None:
    policy = HttpPolicy.parse(allow="10.0.0.0/8", deny="10.0.0.5")
    assert policy.refusal("10.0.0.4") is None
    assert policy.refusal("10.0.0.5") is not None


async def test_resolution_is_checked_before_a_call() -> None:
    policy = HttpPolicy.parse(deny="127.0.0.0/8")
    assert await policy.refusal_resolved("localhost", 80) is not None
    assert await policy.refusal_resolved("127.0.0.1", 80) is not None
