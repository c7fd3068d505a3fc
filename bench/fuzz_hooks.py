"""
Schemathesis hooks for `npm run fuzz` (bench/fuzz.ts; docs/fuzzing.md): they teach the
fuzzer what the API's OpenAPI document states beyond JSON Schema, so that a request the
document calls valid is valid:

- formats of our own: `cel-bool` (a CEL expression of type bool), `configuration-content`
  (a document in the configuration's format: JSON text is YAML, JSON and text alike),
  `svc-pat` (a PAT's shape with its CRC), `api-endpoint` (a method and path of the document),
  `git-repository-url` (https:// or ssh://: file:// needs Git:FileRoots, which this run has none of),
  `peer-base-url` (an https:// origin); a value outside `configuration-content` is none the
  schema can make: its validity is the configuration's format's, so no such case is made;
- `x-unique-by` on an array: its items differ in that member (in any case);
- `x-query-schema` on an operation: rules between its query parameters, as a JSON Schema
  over the query as one object (offset xor cursor, version requires configurationId);
  a valid case keeps to them;
- `x-issued-by` on a parameter: its valid values are only those the service answered
  before (a cursor, an event id); a valid case leaves it out, as the fuzzer follows no answer;
- a header's `pattern`: a case Schemathesis calls valid keeps to it (its coverage phase fills
  an `If-Match` with `0` in cases it still calls valid).

Loaded through SCHEMATHESIS_HOOKS=fuzz_hooks with bench/ on PYTHONPATH.
"""

import base64
import json
import os
import zlib

import schemathesis
from hypothesis import strategies as st
from schemathesis.core.jsonschema.patterns import compile_ecma_pattern

# A few boolean expressions over every variable a policy sees (docs/policies.md).
CEL_BOOL = [
    "true",
    "false",
    "agent.labels['env'] == 'prod'",
    "'env' in agent.labels",
    "configuration.name.startsWith('otel')",
    "version.version > 0",
    "rollout.batchSize <= 100 || rollout.batchPercent <= 50.0",
    "size(agent.labels) < 64 && !(agent.status == 'revoked')",
]
schemathesis.openapi.format("cel-bool", st.sampled_from(CEL_BOOL))

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**9), 10**9) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
schemathesis.openapi.format("configuration-content", _json_values.map(lambda value: json.dumps({"value": value})))


def _base32(data: bytes) -> str:
    return base64.b32encode(data).decode().rstrip("=").lower()


def _svc_pat(secret: bytes) -> str:
    body = f"svc-pat.{_base32(secret)}"
    return f"{body}.{_base32(zlib.crc32(body.encode()).to_bytes(4, 'big'))}"


schemathesis.openapi.format("svc-pat", st.binary(min_size=20, max_size=20).map(_svc_pat))

schemathesis.openapi.format(
    "peer-base-url",
    st.builds(
        lambda host, port: f"https://{host}{port}",
        st.from_regex(r"[a-z][a-z0-9-]{0,20}\.example\.(com|org)", fullmatch=True),
        st.sampled_from(["", ":8443"]),
    ),
)

_repository_name = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
schemathesis.openapi.format(
    "git-repository-url",
    st.builds(
        lambda scheme, host, name: f"{scheme}{host}/acme/{name}.git",
        st.sampled_from(["https://", "ssh://git@"]),
        st.sampled_from(["git.example.com", "gitlab.example.org:8443", "[2001:db8::1]"]),
        _repository_name,
    ),
)


@schemathesis.hook
def after_load_schema(context, schema):
    """`api-endpoint`: an entry naming one of the document's operations (or the hub)."""
    paths = schema.raw_schema.get("paths", {})
    endpoints = [
        f"{method.upper()} {path}"
        for path, operations in paths.items()
        if path.startswith("/api/")
        for method in operations
        if method in ("get", "post", "put", "delete")
    ] + ["GET /hubs/live-updates"]
    schemathesis.openapi.format("api-endpoint", st.sampled_from(sorted(endpoints)))


def _positive(case) -> bool:
    meta = case.meta
    return meta is None or meta.generation.mode.is_positive


def _issued_by_server(operation) -> set:
    return {
        parameter["name"]
        for parameter in operation.definition.raw.get("parameters", [])
        if parameter.get("in") == "query" and "x-issued-by" in parameter.get("schema", {})
    }


def _resolve(schema, root):
    while isinstance(schema, dict) and "$ref" in schema:
        node = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _unique_by(value, schema, root):
    """`value` with the items of every `x-unique-by` array in it kept once per member (the first)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        return {key: _unique_by(item, properties.get(key, {}), root) for key, item in value.items()}
    if isinstance(value, list):
        member = schema.get("x-unique-by")
        items = [_unique_by(item, schema.get("items", {}), root) for item in value]
        if member is None:
            return items
        seen, kept = set(), []
        for item in items:
            key = str(item.get(member)).lower() if isinstance(item, dict) else item
            if key not in seen:
                seen.add(key)
                kept.append(item)
        return kept
    return value


@schemathesis.hook
def map_case(context, case):
    if not _positive(case):
        return case
    if case.query:
        for name in _issued_by_server(case.operation):
            case.query.pop(name, None)
    content = case.operation.definition.raw.get("requestBody", {}).get("content", {}).get("application/json")
    if content and isinstance(case.body, (dict, list)):
        case.body = _unique_by(case.body, content.get("schema", {}), case.operation.schema.raw_schema)
    return case


def _keeps(rule: dict, query: dict) -> bool:
    """Whether the query (as an object) is valid against the JSON Schema keywords x-query-schema uses."""
    keywords = set(rule) - {"allOf", "not", "required", "dependentRequired"}
    if keywords:
        raise ValueError(f"x-query-schema uses {sorted(keywords)}: teach fuzz_hooks.py to read them")
    return (
        all(_keeps(inner, query) for inner in rule.get("allOf", []))
        and ("not" not in rule or not _keeps(rule["not"], query))
        and all(name in query for name in rule.get("required", []))
        and all(
            all(needed in query for needed in needs)
            for name, needs in rule.get("dependentRequired", {}).items()
            if name in query
        )
    )


def _headers_keep_patterns(case) -> bool:
    for parameter in case.operation.definition.raw.get("parameters", []):
        pattern = parameter.get("schema", {}).get("pattern")
        if parameter.get("in") != "header" or pattern is None:
            continue
        value = next((v for k, v in (case.headers or {}).items() if k.lower() == parameter["name"].lower()), None)
        if value is not None and not compile_ecma_pattern(pattern).search(str(value)):
            return False
    return True


def _negates_configuration_content(case) -> bool:
    data = getattr(case.meta.phase, "data", None) if case.meta else None
    description = getattr(data, "description", "") or ""
    return "format" in description and "/properties/content" in description


@schemathesis.hook
def filter_case(context, case):
    if not _positive(case):
        return not _negates_configuration_content(case)
    rules = case.operation.definition.raw.get("x-query-schema")
    return (not rules or _keeps(rules, case.query or {})) and _headers_keep_patterns(case)
