"""The OpenAI-compatible model client against a real loopback HTTP server."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest
from fakemodel import FakeModel, wait_for
from hearthside.adapters.model_client import (
    MAX_REPLY_CHARS,
    ModelConfig,
    OpenAICompatibleModel,
)
from hearthside.core.agent import ModelError

MSGS = [{"role": "user", "content": "hi"}]


def _client(fm: FakeModel, **kw: Any) -> OpenAICompatibleModel:
    cfg: dict[str, Any] = {"base_url": fm.base_url, "model": "fake-model", "backoff": 0.01, "read_timeout": 5.0,
                           "total_timeout": 20.0}
    cfg.update(kw)
    return OpenAICompatibleModel(ModelConfig(**cfg))


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.mark.parametrize("stream", [True, False])
def test_text_reply_arrives_whole_and_streams_in_pieces(stream: bool) -> None:
    with FakeModel([{"text": "Hello there, how are you today?"}]) as fm:
        pieces: list[str] = []

        async def go() -> Any:
            c = _client(fm, stream=stream)
            try:
                return await c.complete(MSGS, [], pieces.append)
            finally:
                await c.aclose()

        reply = run(go())
    assert reply.content == "Hello there, how are you today?"
    assert "".join(pieces) == reply.content
    assert (len(pieces) > 1) == stream
    assert fm.requests[0]["model"] == "fake-model" and fm.requests[0]["stream"] is stream


@pytest.mark.parametrize("stream", [True, False])
def test_tool_calls_are_reassembled(stream: bool) -> None:
    with FakeModel([{"tool_calls": [("recall", '{"key": "pref/coffee"}'), ("search", '{"query": "tea"}')]}]) as fm:
        tools = [{"type": "function", "function": {"name": "recall", "parameters": {}}}]
        reply = run(_client(fm, stream=stream).complete(MSGS, tools))
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("recall", {"key": "pref/coffee"}), ("search", {"query": "tea"})]
    assert len({c.id for c in reply.tool_calls}) == 2
    assert fm.requests[0]["tools"] == tools


def test_api_key_is_sent_as_bearer_token() -> None:
    with FakeModel([{"text": "ok"}]) as fm:
        run(_client(fm, api_key="test-key-123").complete(MSGS, []))
    assert fm.headers[0]["authorization"] == "Bearer test-key-123"
    assert "test-key-123" not in repr(ModelConfig("u", "m", "test-key-123"))


def test_429_then_success_is_retried() -> None:
    with FakeModel([{"status": 429, "retry_after": "0"}, {"text": "after the wait"}]) as fm:
        reply = run(_client(fm).complete(MSGS, []))
    assert reply.content == "after the wait" and len(fm.requests) == 2


def test_500_is_retried_then_reported_with_the_status() -> None:
    with FakeModel(default={"status": 500}) as fm, \
            pytest.raises(ModelError, match=r"HTTP 500.*gave up after 3 attempts"):
            run(_client(fm, max_retries=2).complete(MSGS, []))
    assert len(fm.requests) == 3


def test_401_is_not_retried_and_names_the_key() -> None:
    with FakeModel([{"status": 401, "error": "bad key"}]) as fm, \
            pytest.raises(ModelError, match=r"HTTP 401\): bad key; check the API key"):
            run(_client(fm).complete(MSGS, []))
    assert len(fm.requests) == 1


def test_endpoint_down_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, never listening: nothing answers, nobody else can take it
        port = s.getsockname()[1]
        c = OpenAICompatibleModel(ModelConfig(f"http://127.0.0.1:{port}/v1", "m", backoff=0.01, max_retries=1))
        with pytest.raises(ModelError, match="Could not connect to the model.*is the server running"):
            run(c.complete(MSGS, []))


@pytest.mark.parametrize("raw", ["this is not json", '{"choices": []}', '{"object": "weird"}', "null",
                                 '{"choices": [{"message": null}]}', '{"choices": [{"message": {"tool_calls": [5]}}]}'])
def test_malformed_json_is_a_clear_error(raw: str) -> None:
    with FakeModel([{"raw": raw}]) as fm, pytest.raises(ModelError, match="could not read"):
        run(_client(fm, stream=False).complete(MSGS, []))


def test_a_reply_that_never_ends_times_out() -> None:
    with FakeModel([{"hang": True}]) as fm, pytest.raises(ModelError, match="stopped answering"):
            run(_client(fm, read_timeout=0.5).complete(MSGS, [], lambda s: None))


def test_a_trickle_that_never_ends_hits_the_total_timeout() -> None:
    with FakeModel([{"hang": True}]) as fm, \
            pytest.raises(ModelError, match="did not finish its answer within 0.6 s"):
            run(_client(fm, read_timeout=30, total_timeout=0.6).complete(MSGS, []))


def test_config_prefers_environment_then_settings_then_secret_store() -> None:
    class Settings(dict):  # type: ignore[type-arg]
        def get(self, k: str, d: Any = None) -> Any:
            return super().get(k, d)

    class Secrets:
        def get(self, ref: str) -> str | None:
            return "from-keyring" if ref == "model/api_key" else None

    from hearthside.app.model import ModelNotConfigured, ModelService

    st = Settings({"model.base_url": "http://127.0.0.1:11434/v1/", "model.name": "llama3"})
    cfg = ModelService(st, Secrets, env={}).config()  # type: ignore[arg-type]
    assert (cfg.base_url, cfg.model, cfg.api_key) == ("http://127.0.0.1:11434/v1", "llama3", "from-keyring")
    env = {"HEARTHSIDE_MODEL_BASE_URL": "https://x/v1", "HEARTHSIDE_MODEL": "m2", "HEARTHSIDE_MODEL_API_KEY": "k"}
    cfg = ModelService(st, Secrets, env=env).config()  # type: ignore[arg-type]
    assert (cfg.base_url, cfg.model, cfg.api_key) == ("https://x/v1", "m2", "k")
    with pytest.raises(ModelNotConfigured, match="No model is configured") as none_set:
        ModelService(Settings(), lambda: None, env={}).config()  # type: ignore[arg-type]
    assert "hearthside model use BASE_URL NAME" in str(none_set.value)  # the command, not only TOML keys


def test_a_local_server_is_found_and_offered_when_nothing_is_configured(monkeypatch, app_context) -> None:  # type: ignore[no-untyped-def]
    import hearthside.app.model as mc
    from hearthside.app.doctor import check_model

    with FakeModel(model_ids=("llama3.2", "qwen3")) as fm:
        monkeypatch.setattr(mc, "LOCAL_CANDIDATES", (("Ollama", fm.base_url), ("LM Studio", "http://127.0.0.1:9/v1")))
        found = run(app_context.model.adiscover_local())
        check = check_model(app_context)
    assert found == [{"label": "Ollama", "base_url": fm.base_url, "models": ["llama3.2", "qwen3"]}]
    assert check.status == "warn" and "found Ollama" in check.detail and "llama3.2" in check.detail


def test_chat_without_a_terminal_names_the_local_server_it_found_and_the_command_to_use_it(
    monkeypatch, app_context
) -> None:  # type: ignore[no-untyped-def]
    import hearthside.app.model as mc
    from hearthside.cli.common import HandledError
    from hearthside.cli.running import model_or_offer

    with FakeModel(model_ids=("llama3.2",)) as fm:
        monkeypatch.setattr(mc, "LOCAL_CANDIDATES", (("Ollama", fm.base_url),))
        with pytest.raises(HandledError) as offered:
            model_or_offer(app_context, interactive=False)
    msg = str(offered.value)
    assert msg.startswith(f"No model is configured. Found Ollama at {fm.base_url}")
    assert msg.endswith(f"use it with: hearthside model use {fm.base_url} llama3.2")
    assert msg.count("No model is configured") == 1 and "settings.toml" not in msg  # one offer, not two


def test_the_doctor_reports_a_configured_model_that_answers(monkeypatch, app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.app.doctor import check_model

    with FakeModel() as fm:
        for k, v in fm.env().items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("HEARTHSIDE_MODEL_API_KEY", "k")
        ok = check_model(app_context)
        headers = fm.headers
    assert ok.status == "ok" and ok.detail == f"fake-model at {fm.base_url}"
    assert ok.data == {"base_url": fm.base_url, "model": "fake-model", "api_key": True}
    assert headers == []  # GET /models is not recorded as a completion request
    monkeypatch.setenv("HEARTHSIDE_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
    down = check_model(app_context)
    assert down.status == "warn" and "not answering" in down.detail


@pytest.mark.parametrize("sse,why", [
    ('data: {"choices": [{"delta": {"content": "Hel"}}]}\n\n', "ended before the answer was complete"),
    ("data: {not json}\n\n", "bad stream chunk"),
    ('data: {"error": {"message": "model overloaded"}}\n\n', "model overloaded"),
    ('data: {"choices": ["not an object"]}\n\n', "bad stream chunk"),
    ('data: {"choices": [{"delta": {"tool_calls": [{"index": "first"}]}}]}\n\n', "bad stream chunk"),
])
def test_a_broken_event_stream_is_a_clear_error(sse: str, why: str) -> None:
    with FakeModel([{"sse": sse}]) as fm, pytest.raises(ModelError, match=why):
        run(_client(fm).complete(MSGS, []))


@pytest.mark.slow
def test_model_cli_use_set_key_and_chat_sends_the_keyring_key(app_context, run_cli, secret_service) -> None:  # type: ignore[no-untyped-def]
    import hearthside.app.context  # noqa: F401
    from personas import make_persona

    make_persona(app_context)
    with FakeModel([{"text": "hello"}], model_ids=("tiny",)) as fm:
        used = run_cli("model", "use", fm.base_url, "tiny")
        stored = run_cli("model", "set-key", input="sk-test-keyring-value-0123456789\n")
        shown = run_cli("model", "show", "--json")
        chatted = run_cli("chat", "juniper", "hi")
        auth = fm.headers[0]["authorization"]
    assert used.returncode == 0 and stored.returncode == 0, (used.stderr, stored.stderr)
    doc = json.loads(shown.stdout)
    assert doc == {"base_url": fm.base_url, "model": "tiny", "api_key": True, "source": "settings",
                   "credential_source": "keyring"}
    assert "sk-test-keyring" not in shown.stdout + stored.stdout + stored.stderr
    assert chatted.returncode == 0 and chatted.stdout == "hello\n"
    assert auth == "Bearer sk-test-keyring-value-0123456789"
    assert "sk-test-keyring" not in app_context.paths.settings_file.read_text()
    gone = run_cli("model", "forget-key")
    assert gone.returncode == 0 and json.loads(run_cli("model", "show", "--json").stdout)["api_key"] is False
    assert "was removed" in gone.stdout
    again = run_cli("model", "forget-key")  # nothing left: say so rather than claim a removal
    assert again.returncode == 0 and "No API key is stored" in again.stdout


def test_model_use_refuses_something_that_is_not_an_address(run_cli) -> None:  # type: ignore[no-untyped-def]
    bad = run_cli("model", "use", "localhost:11434", "llama3")
    assert bad.returncode == 1 and "not a web address" in bad.stderr


def test_model_use_takes_a_pasted_full_endpoint_as_its_base_url(run_cli, app_context) -> None:  # type: ignore[no-untyped-def]
    used = run_cli("model", "use", "https://api.openai.com/v1/chat/completions/", "gpt-4o-mini")
    assert used.returncode == 0 and "note: using the base URL https://api.openai.com/v1" in used.stderr
    app_context.settings.reload()
    assert app_context.settings.get("model.base_url") == "https://api.openai.com/v1"


def test_model_use_refuses_an_empty_model_name_and_keeps_the_settings(run_cli, app_context) -> None:  # type: ignore[no-untyped-def]
    blank = run_cli("model", "use", "http://127.0.0.1:11434/v1", "  ")
    assert blank.returncode == 1 and "model name is empty" in blank.stderr
    settings = app_context.paths.settings_file
    assert settings.exists() is False or "11434" not in settings.read_text()


def test_whole_tool_calls_streamed_at_one_index_stay_separate_calls() -> None:
    # Some servers stream each complete call as its own chunk, every one at index 0.
    def chunk(cid: str, name: str, args: str) -> str:
        call = {"index": 0, "id": cid, "type": "function", "function": {"name": name, "arguments": args}}
        return "data: " + json.dumps({"choices": [{"delta": {"tool_calls": [call]}}]}) + "\n\n"

    sse = (chunk("a1", "weather", '{"city": "Lisbon"}') + chunk("b2", "clock", "{}")
           + 'data: {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}\n\ndata: [DONE]\n\n')
    with FakeModel([{"sse": sse}]) as fm:
        reply = run(_client(fm).complete(MSGS, []))
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("a1", "weather", '{"city": "Lisbon"}'), ("b2", "clock", "{}")]


def test_retries_back_off_and_honour_retry_after_three_times_by_default() -> None:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    with FakeModel([{"status": 503}, {"status": 502}, {"status": 429, "retry_after": "2"}, {"text": "at last"}]) as fm:
        reply = run(OpenAICompatibleModel(ModelConfig(fm.base_url, "fake-model"), sleep=record).complete(MSGS, []))
    assert reply.content == "at last" and len(fm.requests) == 4
    assert 0.5 <= waits[0] <= 0.625 and 1.0 <= waits[1] <= 1.25 and waits[2] == 2.0
    waits.clear()
    with FakeModel(default={"status": 500}) as fm, pytest.raises(ModelError, match="gave up after 4 attempts"):
        run(OpenAICompatibleModel(ModelConfig(fm.base_url, "fake-model"), sleep=record).complete(MSGS, []))
    assert len(fm.requests) == 4 and len(waits) == 3 and waits[2] >= 2.0


# -- issue 18 hole 5: nothing the server sends is read without a bound -----------------------

HUGE = 50_000_000  # far past every cap; made lazily by the fake server, never held whole


def _hung_up_early(fm: FakeModel) -> bool:
    """The server saw the client hang up before it had sent the whole reply."""
    assert wait_for(lambda: fm.huge_sent, 30), "the huge reply never finished or failed"
    sent, hung_up = fm.huge_sent[0]
    return hung_up and sent < HUGE


def test_one_endless_stream_line_is_an_error_and_not_read_to_the_end() -> None:
    with FakeModel([{"huge": "sse_line", "size": HUGE}]) as fm:
        with pytest.raises(ModelError, match=r"sent a line of its streamed reply longer than 1 MiB; "
                                             r"Hearthside stopped reading it"):
            run(_client(fm, max_retries=0).complete(MSGS, []))
        assert _hung_up_early(fm)


def test_a_streamed_reply_past_the_text_cap_is_cut_with_a_sentence() -> None:
    pieces: list[str] = []
    with FakeModel([{"huge": "sse_text", "size": HUGE}]) as fm:
        reply = run(_client(fm).complete(MSGS, [], pieces.append))
        assert _hung_up_early(fm)
    note = f"[the model's reply was cut at {MAX_REPLY_CHARS:,} characters]"
    assert reply.content.endswith("\n\n" + note) and reply.finish_reason == "length"
    assert reply.content.count("x") == MAX_REPLY_CHARS
    assert "".join(pieces) == reply.content  # the user sees the sentence as it streams


def test_a_streamed_tool_call_past_the_cap_is_an_error() -> None:
    with FakeModel([{"huge": "sse_args", "size": HUGE}]) as fm:
        with pytest.raises(ModelError, match=r"sent a tool call longer than 2,097,152 characters"):
            run(_client(fm).complete(MSGS, []))
        assert _hung_up_early(fm)


def test_a_huge_non_streamed_body_is_an_error_and_not_read_to_the_end() -> None:
    with FakeModel([{"huge": "body", "size": HUGE}]) as fm:
        with pytest.raises(ModelError, match=r"sent a reply larger than 4 MiB; Hearthside stopped reading it"):
            run(_client(fm, stream=False).complete(MSGS, []))
        assert _hung_up_early(fm)


def test_a_huge_error_body_is_read_only_in_part_and_the_message_stays_short() -> None:
    with FakeModel([{"huge": "error", "size": HUGE}]) as fm:
        with pytest.raises(ModelError, match=r"refused the request \(HTTP 400\)") as err:
            run(_client(fm).complete(MSGS, []))
        assert _hung_up_early(fm)
    assert len(str(err.value)) < 1000


def test_a_non_streamed_text_past_the_cap_is_cut_with_a_sentence() -> None:
    text = "y" * (MAX_REPLY_CHARS + 10)
    with FakeModel([{"text": text}]) as fm:
        reply = run(_client(fm, stream=False).complete(MSGS, []))
    assert reply.content == "y" * MAX_REPLY_CHARS + f"\n\n[the model's reply was cut at {MAX_REPLY_CHARS:,} characters]"


def test_a_huge_model_list_is_refused_not_read() -> None:
    from hearthside.adapters.model_client import list_models, probe_get

    with FakeModel([{"huge": "body", "size": HUGE}]) as fm:
        fm.server.RequestHandlerClass.do_GET = fm.server.RequestHandlerClass.do_POST  # type: ignore[attr-defined]
        answer = run(list_models(fm.base_url, timeout=20))
        assert answer.models == () and "larger than 4 MiB" in answer.error
        assert _hung_up_early(fm)
        fm.huge_sent.clear()
        fm.add({"huge": "body", "size": HUGE})
        probe = run(probe_get(fm.base_url + "/models", timeout=20))
        assert probe.status == 200 and len(probe.body) == 200_000
        assert _hung_up_early(fm)


@pytest.mark.parametrize("raw,lines", [
    ([b"data: a\r\n\r\nda", b"ta: b\r", b"\ndata: c\rdata: d\n"], ["data: a", "", "data: b", "data: c", "data: d"]),
    ([b"one\n", b"", b"two"], ["one", "two"]),
    ([b"caf\xc3", b"\xa9\n"], ["caf\u00e9"]),
])
def test_the_bounded_line_reader_splits_like_an_event_stream(raw: list[bytes], lines: list[str]) -> None:
    from hearthside.adapters.model_client import _bounded_lines

    async def chunks() -> Any:
        for c in raw:
            yield c

    async def go() -> list[str]:
        return [line async for line in _bounded_lines(chunks(), 1 << 20)]

    assert run(go()) == lines
