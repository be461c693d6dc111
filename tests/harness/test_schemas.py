"""Every bundled schema is a valid JSON Schema (2020-12), and both validators compile it."""
from __future__ import annotations

import json

import jsonschema_rs
import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from obai_e2e.base.paths import schemas_dir
from obai_e2e.base.schema import load_schema

SCHEMAS = sorted(p.name for p in schemas_dir().glob("*.json"))


def test_the_bundle_has_its_schemas():
    assert {"cases.schema.json", "target.schema.json", "results.v1.schema.json", "verdict.v1.schema.json"} <= set(SCHEMAS)


@pytest.mark.parametrize("name", SCHEMAS)
def test_bundled_schema_is_valid(name):
    schema = load_schema(name)
    assert schema == json.loads((schemas_dir() / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    jsonschema_rs.validator_for(schema)


def test_the_meta_schema_check_can_fail():
    with pytest.raises(SchemaError):
        Draft202012Validator.check_schema({"type": "no-such-type"})
