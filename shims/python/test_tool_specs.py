"""TOOL_SPECS against procmon: the specs are what ``procmon schema`` prints
now, each input schema accepts the shim's example requests and refuses a
malformed one, and execute_command runs a real command.

The schemas are checked by a small validator of the JSON Schema keywords
procmon's schemas use, and also by the jsonschema package when it is
importable.
"""
import copy
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import tool_specs  # noqa: E402
from procmon_tools import (  # noqa: E402
    EXAMPLE_REQUESTS,
    TOOL_SPECS,
    TOOLS,
    ProcmonError,
    execute_command,
)

try:
    import jsonschema  # type: ignore
except ImportError:  # the shim and its tests need the standard library only
    jsonschema = None

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def errors(schema, value, path="$"):
    """The ways value breaks schema, for the keywords procmon uses."""
    out = []
    typ = schema.get("type")
    if typ is not None:
        types = typ if isinstance(typ, list) else [typ]
        if not any(_TYPES[t](value) for t in types):
            return [f"{path}: {value!r} is not {typ}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "oneOf" in schema:
        matches = [s for s in schema["oneOf"] if not errors(s, value, path)]
        if len(matches) != 1:
            out.append(f"{path}: matches {len(matches)} of oneOf, not exactly one")
    if "anyOf" in schema and not any(not errors(s, value, path) for s in schema["anyOf"]):
        out.append(f"{path}: matches nothing of anyOf")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                out.append(f"{path}: {key} is required")
        for key, v in value.items():
            if key in props:
                out += errors(props[key], v, f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                out.append(f"{path}: {key} is not allowed")
            elif isinstance(schema.get("additionalProperties"), dict):
                out += errors(schema["additionalProperties"], v, f"{path}.{key}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            out.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, v in enumerate(value):
                out += errors(schema["items"], v, f"{path}[{i}]")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            out.append(f"{path}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            out.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(f"{path}: below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            out.append(f"{path}: above {schema['maximum']}")
    return out


def procmon_bin():
    binary = os.environ.get("PROCMON_BIN")
    if binary:
        return os.path.abspath(binary)
    build = tempfile.mkdtemp(prefix="procmon-bin-")
    binary = os.path.join(build, "procmon")
    subprocess.run(["go", "build", "-o", binary, "."], cwd=REPO_ROOT, check=True)
    return binary


class ToolSpecsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.binary = procmon_bin()

    def spec(self, name):
        return next(s for s in TOOL_SPECS if s["name"] == name)

    def assert_valid(self, schema, value):
        self.assertEqual(errors(schema, value), [], value)
        if jsonschema is not None:
            jsonschema.Draft202012Validator(schema).validate(value)

    def assert_invalid(self, schema, value):
        self.assertNotEqual(errors(schema, value), [], value)
        if jsonschema is not None:
            self.assertFalse(jsonschema.Draft202012Validator(schema).is_valid(value), value)

    def test_specs_are_what_procmon_prints(self):
        with open(tool_specs.PATH, encoding="utf-8") as f:
            stored = f.read()
        self.assertEqual(
            stored, tool_specs.render(tool_specs.specs_from(self.binary)),
            "tool_specs.json is stale: run python3 shims/python/tool_specs.py",
        )

    def test_every_tool_has_a_spec_and_examples(self):
        self.assertEqual(sorted(s["name"] for s in TOOL_SPECS), sorted(TOOLS))
        self.assertEqual(sorted(EXAMPLE_REQUESTS), sorted(TOOLS))
        for spec in TOOL_SPECS:
            self.assertTrue(spec["description"])
            self.assertEqual(spec["input_schema"]["type"], "object")

    def test_examples_are_accepted(self):
        for name, examples in EXAMPLE_REQUESTS.items():
            for example in examples:
                with self.subTest(tool=name, request=example):
                    self.assert_valid(self.spec(name)["input_schema"], example)

    def test_malformed_requests_are_refused(self):
        for name, examples in EXAMPLE_REQUESTS.items():
            schema = self.spec(name)["input_schema"]
            base = examples[0]
            bad = [dict(base, surprise=1)]  # every request is closed
            for key in schema.get("required", []):
                missing = dict(base)
                del missing[key]
                bad.append(missing)
            if "monitor_id" in base:
                bad.append(dict(base, monitor_id="../../etc"))
            if "argv" in base:
                bad.append(dict(base, argv=[]))
                bad.append(dict(base, argv="echo hi"))
            if name == "wait_process":
                wrong = copy.deepcopy(base)
                wrong["condition"] = {"kind": "output"}  # no text
                bad.append(wrong)
                bad.append(dict(base, condition={"kind": "url", "url": "http://x"}))
                bad.append(dict(base, timeout_seconds=0))
            if name == "cancel_process":
                bad.append(dict(base, grace_seconds=-1))
            for request in bad:
                with self.subTest(tool=name, request=request):
                    self.assert_invalid(schema, request)


class ExecuteCommandTest(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.TemporaryDirectory(prefix="procmon-state-")
        self.addCleanup(self.state.cleanup)
        self.env = {"PROCMON_STATE_DIR": os.path.join(self.state.name, "state"), "PROCMON_RUN": ""}
        self.binary = procmon_bin()
        subprocess.run([self.binary, "configure", "--enable"], stdin=subprocess.DEVNULL,
                       capture_output=True, check=True, env=dict(os.environ, **self.env))

    def test_result_and_budget(self):
        secret = "tok-0123456789abcdef"
        got = execute_command(
            {"argv": [sys.executable, "-c", f"print('key={secret}'); raise SystemExit(4)"], "secrets": [secret]},
            binary=self.binary, env=self.env)
        self.assertEqual(got["exit_code"], 4)
        self.assertIsNone(got["signal"])
        self.assertEqual(got["text"], "key=[REDACTED]\n")
        self.assertEqual(got["command_ordinal"], 1)
        self.assertTrue(got["group_empty_verified"])
        with self.assertRaises(ProcmonError) as caught:
            execute_command({"argv": ["true"], "depends_on": ["m_" + "0" * 26]}, binary=self.binary, env=self.env)
        self.assertEqual(caught.exception.code, "unknown_monitor")


if __name__ == "__main__":
    unittest.main()
