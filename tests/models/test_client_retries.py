"""The chat client against a real scripted server: which failures it retries, how long it waits,
when it gives up, and the typed error it raises then."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

from anpord.models import (
    ChatClient,
    MalformedResponseError,
    ModelConnectionError,
    ModelTimeoutError,
    ProviderError,
    RateLimitedError,
    RetryPolicy,
)
from anpord.testing.model_server import (
    hang,
    malformed,
    no_choices,
    rate_limit,
    reset,
    rule,
    server_error,
    text,
)

FAST = RetryPolicy(max_attempts=3, base_delay=0.02, max_delay=0.05)


def ask(url: str, prompt: str, **client_kwargs: Any) -> tuple[Any, float]:
    """One chat call on a fresh loop: (the response, or the exception raised; seconds taken)."""

    async def go() -> Any:
        async with ChatClient(url, **{"retry": FAST, **client_kwargs}) as client:
            return await client.chat([{"role": "user", "content": prompt}], model="scripted-model")

    started = time.monotonic()
    try:
        result: Any = asyncio.run(asyncio.wait_for(go(), 120))  # a bound on a hang only
    except Exception as exc:  # noqa: BLE001 - the tests look at which
        result = exc
    return result, time.monotonic() - started


def test_a_429_waits_the_seconds_retry_after_asks_then_succeeds(model_server: Any) -> None:
    server = model_server([rule("busy", text("done"), fault=rate_limit(retry_after=1, times=1))])
    response, took = ask(server.url, "busy")
    assert response.text == "done"
    assert len(server.requests) == 2
    assert took >= 1.0, "Retry-After: 1 was not honoured"


def test_a_429_with_an_http_date_waits_until_that_date(model_server: Any) -> None:
    server = model_server(
        [rule("busy", text("done"), fault=rate_limit(retry_after=2, times=1, http_date=True))]
    )
    response, took = ask(server.url, "busy")
    assert response.text == "done"
    # The date has whole seconds: "now + 2s" truncated is between 1 and 2 seconds away.
    assert took >= 0.9


def test_a_retry_after_longer_than_allowed_gives_up_at_once(model_server: Any) -> None:
    server = model_server(
        [rule("busy", text("done"), fault=rate_limit(retry_after=3600, times=None))]
    )
    error, took = ask(server.url, "busy")
    assert isinstance(error, RateLimitedError)
    assert error.status == 429 and error.retry_after == 3600
    assert "asks to wait 3600s, more than max_retry_after=60s" in str(error)
    assert len(server.requests) == 1  # it did not wait the hour and try again


def test_still_rate_limited_after_every_attempt_is_a_rate_limited_error(model_server: Any) -> None:
    server = model_server([rule("busy", fault=rate_limit(retry_after=0.05, times=None))])
    error, _ = ask(server.url, "busy")
    assert isinstance(error, RateLimitedError) and error.attempts == 3
    assert "rate limited (HTTP 429) after 3 attempt(s): Rate limit reached (scripted)" in str(error)
    assert len(server.requests) == 3


def test_a_500_then_success(model_server: Any) -> None:
    server = model_server(
        [rule("flaky", text("second time lucky"), fault=server_error(500, times=1))]
    )
    response, _ = ask(server.url, "flaky")
    assert response.text == "second time lucky"
    assert len(server.requests) == 2


def test_a_5xx_on_every_attempt_is_a_provider_error_with_its_status(model_server: Any) -> None:
    server = model_server([rule("down", fault=server_error(503, times=None))])
    error, _ = ask(server.url, "down")
    assert type(error) is ProviderError and error.status == 503 and error.attempts == 3
    assert str(error) == (
        f"scripted-model at 127.0.0.1:{server.port}: HTTP 503: The server had an error (scripted) "
        "(after 3 attempts)"
    )
    assert len(server.requests) == 3


def test_a_4xx_is_not_retried(model_server: Any) -> None:
    server = model_server([rule("bad", fault=server_error(400, times=None))])
    error, _ = ask(server.url, "bad")
    assert type(error) is ProviderError and error.status == 400 and error.attempts == 1
    assert len(server.requests) == 1


def test_a_401_without_a_key_says_which_variable_is_unset(
    model_server: Any, monkeypatch: Any
) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    server = model_server([rule("auth", fault=server_error(401, times=None))])
    error, _ = ask(server.url, "auth", api_key_env="NO_SUCH_KEY_VAR")
    assert isinstance(error, ProviderError) and error.status == 401
    assert str(error).endswith("(no API key was sent: NO_SUCH_KEY_VAR is not set)")


def test_a_connection_reset_mid_body_then_success(model_server: Any) -> None:
    server = model_server([rule("cut", text("whole this time"), fault=reset(times=1))])
    response, _ = ask(server.url, "cut")
    assert response.text == "whole this time"
    assert len(server.requests) == 2


def test_resets_on_every_attempt_are_a_connection_error(model_server: Any) -> None:
    server = model_server([rule("cut", fault=reset(times=None))])
    error, _ = ask(server.url, "cut")
    assert isinstance(error, ModelConnectionError) and error.attempts == 3
    assert "connection failed" in str(error) and str(error).endswith("(after 3 attempts)")


def test_nobody_listening_is_a_connection_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    error, _ = ask(f"http://127.0.0.1:{port}/v1", "hello")
    assert isinstance(error, ModelConnectionError)
    assert f"Cannot connect to host 127.0.0.1:{port}" in str(error)


def test_a_server_that_never_answers_times_out_on_each_attempt(model_server: Any) -> None:
    server = model_server([rule("wait", fault=hang())])
    error, took = ask(
        server.url, "wait", timeout=0.3, retry=RetryPolicy(max_attempts=2, base_delay=0.01)
    )
    assert isinstance(error, ModelTimeoutError) and error.attempts == 2
    assert "no answer within 0.3s (after 2 attempts)" in str(error)
    assert took >= 0.6
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "fault, message",
    [
        (malformed(), "the response is not JSON: '<html>this is not JSON'"),
        (no_choices(), "the response has no choices"),
    ],
)
def test_a_malformed_answer_is_not_retried(model_server: Any, fault: Any, message: str) -> None:
    server = model_server([rule("odd", fault=fault)])
    error, _ = ask(server.url, "odd")
    assert isinstance(error, MalformedResponseError)
    assert str(error) == f"scripted-model at 127.0.0.1:{server.port}: {message}"
    assert len(server.requests) == 1
