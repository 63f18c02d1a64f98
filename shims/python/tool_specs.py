"""Write tool_specs.json, the shim's TOOL_SPECS, from ``procmon schema``.

    python3 shims/python/tool_specs.py [PROCMON_BIN]

Each agent tool becomes ``{"name", "description", "input_schema"}`` with
procmon's own description and input schema, so the shim never describes
a tool other than procmon does; the shim's tests check that the file is
what procmon prints now.
"""
import json
import os
import subprocess
import sys
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "tool_specs.json")


def specs_from(binary: str) -> List[Dict[str, Any]]:
    out = subprocess.run([binary, "schema"], stdin=subprocess.DEVNULL, capture_output=True, check=True)
    specs = []
    for command in json.loads(out.stdout)["commands"]:
        if command.get("tool"):
            specs.append({
                "name": command["tool"],
                "description": command["description"],
                "input_schema": command["tool_input"],
            })
    return specs


def render(specs: List[Dict[str, Any]]) -> str:
    return json.dumps(specs, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    binary = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PROCMON_BIN", "procmon")
    with open(PATH, "w", encoding="utf-8") as f:
        f.write(render(specs_from(binary)))
