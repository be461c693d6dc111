"""The certificate check of the harness's own HTTP calls: httpx's default, built once per process."""
from __future__ import annotations

import ssl

from obai_e2e.base.tls import default_context


def test_it_is_httpx_default_check_with_the_certificates_loaded_once():
    context = default_context()
    assert context is default_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # a certificate bundle is loaded
