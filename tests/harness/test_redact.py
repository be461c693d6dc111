"""Secrets never reach stored artifacts."""
from obai_e2e.base.redact import MARK, Redactor


def test_env_secrets_and_headers_are_redacted():
    env = {"OPIK_API_KEY": "sk-live-1234567890", "MY_TOKEN": "tok_abcdef", "DB_PASSWORD": "hunter22",
           "PATH": "/usr/bin", "SHORT_KEY": "ab"}
    r = Redactor(env, ["*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*"])
    text = ("using sk-live-1234567890 and tok_abcdef; pw hunter22\n"
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig\nx-api-key: k-999999")
    out = r.text(text)
    for secret in ("sk-live-1234567890", "tok_abcdef", "hunter22", "eyJhbGciOiJIUzI1NiJ9", "k-999999"):
        assert secret not in out
    assert out.count(MARK) >= 5
    assert "/usr/bin" not in out and "PATH" not in out
    data = r.data({"stderr": "key=sk-live-1234567890", "nested": [{"h": "Bearer abcdefghijkl"}]})
    assert "sk-live" not in str(data) and "abcdefghijkl" not in str(data)
    safe_env = r.env(env, ["*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*"])
    assert safe_env["OPIK_API_KEY"] == MARK and safe_env["PATH"] == "/usr/bin"


def test_the_quick_scan_never_skips_text_the_patterns_would_change():
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from obai_e2e.base import redact

    words = st.sampled_from(["Authorization", "proxy-authorization", "X-API-KEY", "api_key", "apikey",
                             "comet-api-key", "COMET_API_KEY", "bearer", "Bearer", ":", "=", " ", "token",
                             "basic", "abcdefghijkl", "k-999999", "\n", ","])
    r = Redactor({}, [])

    def slow(value: str) -> str:
        value = redact._HEADER.sub(
            lambda m: f"{m.group(1)}{m.group(2)}{(m.group(3) + ' ') if m.group(3) else ''}{MARK}", value)
        return redact._BEARER.sub(f"Bearer {MARK}", value)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(words | st.text(max_size=5), max_size=12).map("".join))
    def check(value: str) -> None:
        assert r.text(value) == slow(value)

    check()
