"""Request bodies checked against the schemas of a description.

Follows the proto3 JSON mapping Google's front end applies: unknown fields and wrong JSON types
are rejected; 64-bit integers travel as decimal strings (numbers are accepted too), `byte` as
base64, `google-datetime` as RFC 3339. Output-only (`readOnly`) fields are dropped from the
input, as Google ignores them.
"""
import base64
import binascii
import re

import protos
from errors import invalid

RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
DURATION = re.compile(r"-?\d+(\.\d+)?s")
INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}


def _where(path):
    return f" at '{path}'" if path else ""


def _bad(path, value, expected):
    return invalid(
        f"Invalid value{_where(path)} ({expected}), {_json(value)}",
        field=path,
    )


def _json(value):
    import json

    return json.dumps(value)


def _integer(value, path, fmt, expected):
    if isinstance(value, bool):
        raise _bad(path, value, expected)
    if isinstance(value, str):
        if not re.fullmatch(r"-?\d+", value.strip()):
            raise _bad(path, value, expected)
        number = int(value)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        raise _bad(path, value, expected)
    low, high = INT_RANGES.get(fmt, INT_RANGES["int64"])
    if not low <= number <= high:
        raise _bad(path, value, expected)
    return number


class Validator:
    def __init__(self, service):
        self.service = service

    def resolve(self, schema):
        while schema and "$ref" in schema:
            schema = self.service.schema(schema["$ref"])
        return schema or {}

    def validate(self, value, schema, path="", message=None, field=None):
        """Validates `value`, returns a copy with output-only fields dropped.
        `message` and `field` name where the value sits, to translate enum numbers."""
        if schema and "$ref" in schema:
            message = schema["$ref"]
        schema = self.resolve(schema)
        kind = schema.get("type")
        if kind == "any" or not kind:
            return value
        if value is None:
            return None  # JSON null means "unset" in the proto3 mapping
        if kind == "object":
            return self._object(value, schema, path, message)
        if kind == "array":
            if not isinstance(value, list):
                raise _bad(path, value, "TYPE_LIST")
            item = schema.get("items", {})
            return [self.validate(v, item, f"{path}[{i}]", message, field) for i, v in enumerate(value)]
        if kind == "boolean":
            if not isinstance(value, bool):
                raise _bad(path, value, "TYPE_BOOL")
            return value
        if kind == "integer":
            return _integer(value, path, schema.get("format", "int32"), "TYPE_INT32")
        if kind == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise _bad(path, value, "TYPE_DOUBLE")
            if isinstance(value, str):
                try:
                    float(value)
                except ValueError:
                    raise _bad(path, value, "TYPE_DOUBLE")
            return value
        if kind == "string":
            return self._string(value, schema, path, message, field)
        return value

    def _string(self, value, schema, path, message, field):
        fmt = schema.get("format")
        if fmt in ("int64", "uint64"):
            return str(_integer(value, path, fmt, f"TYPE_{fmt.upper()}"))
        enum = schema.get("enum")
        if enum and isinstance(value, int) and not isinstance(value, bool):
            name = protos.enum_name(self.service.name, message, field, value, tuple(enum))
            if name is None:
                raise invalid(f"Invalid value{_where(path)} (TYPE_ENUM), {value}", field=path)
            return name  # proto3 JSON accepts enum numbers; keep the name
        if not isinstance(value, str):
            raise _bad(path, value, "TYPE_STRING")
        if enum and value not in enum:
            raise invalid(f"Invalid value{_where(path)} (TYPE_ENUM), {_json(value)}", field=path)
        if fmt == "byte":
            try:
                padded = value + "=" * (-len(value) % 4)
                base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
            except (binascii.Error, ValueError):
                raise _bad(path, value, "TYPE_BYTES")
        if fmt in ("google-datetime", "date-time") and not RFC3339.fullmatch(value):
            raise invalid(f"Invalid value{_where(path)} (Timestamp), {_json(value)}", field=path)
        if fmt == "google-duration" and not DURATION.fullmatch(value):
            raise invalid(f"Invalid value{_where(path)} (Duration), {_json(value)}", field=path)
        pattern = schema.get("pattern")
        if pattern and path.endswith("name") and not re.fullmatch(pattern, value):
            raise invalid(
                f"Invalid value for field '{path}': '{value}'. Must be a match of regex '{pattern}'",
                field=path,
            )
        return value

    def _object(self, value, schema, path, message):
        if not isinstance(value, dict):
            raise _bad(path, value, "TYPE_MESSAGE")
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if props is None and extra is None:
            return dict(value)  # free-form object
        out = {}
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            if props is not None and key in props:
                prop = props[key]
                checked = self.validate(item, prop, sub, message, key)  # output-only fields must parse too
                if not prop.get("readOnly"):
                    out[key] = checked
            elif extra is not None:
                out[key] = self.validate(item, extra, sub, message, None)
            else:
                raise invalid(
                    f'Invalid JSON payload received. Unknown name "{key}"{_where(path)}: Cannot find field.',
                    field=path,
                )
        return out


def required_fields(service, schema_name):
    """Fields the description marks as required ("Required." in the description)."""
    schema = service.schema(schema_name) or {}
    return [
        k
        for k, p in schema.get("properties", {}).items()
        if p.get("required") or p.get("description", "").lstrip().startswith("Required.")
    ]
