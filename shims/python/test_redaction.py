"""Redaction of a registered secret as Python's own libraries print it.

A service registers a secret, then prints it through json.dumps (with its
default ensure_ascii), urllib.parse.quote(s, safe=""), quote_plus and
html.escape (and HTML-escaped text inside JSON, a URL or another
html.escape), and a multi-line secret with its line breaks rewritten as
runs of whitespace. None of these may reach the logs or any file of the
state directory. Standard library only; procmon is $PROCMON_BIN, as for
test_procmon_tools.

    PROCMON_BIN=/path/to/procmon python3 -m unittest discover -s shims/python
"""

import html
import json
import os
import re
import sys
import unittest
import urllib.parse
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import test_procmon_tools  # noqa: E402
from procmon_tools import process_logs, wait_process  # noqa: E402
from test_procmon_tools import WAIT_SECONDS, ProcmonToolsTest  # noqa: E402

# Every character some encoder escapes: quotes, markup, '/', '+', a space,
# non-ASCII (one written by ensure_ascii as a surrogate pair) and a tab.
SECRET = 'pa$$ "w0rd" <&> /+é日🔑\tend-of-it'
# A multi-line secret whose first line is shorter than a secret may be.
KEY = "abc\nsecond-line-of-the-key\nthird-line-of-the-key"

# The service prints one form per line between two canaries, which must
# come through untouched.
SERVICE = r"""
import html, json, sys, urllib.parse
secret, key = sys.argv[1], sys.argv[2]
print("canary-before")
print("as is:", secret)
print("json:", json.dumps(secret))
print("json in a record:", json.dumps({"password": secret, "n": 1}))
print("quote:", urllib.parse.quote(secret, safe=""))
print("quote_plus:", urllib.parse.quote_plus(secret))
print("html:", html.escape(secret))
print("html, quote=False:", html.escape(secret, quote=False))
print("repr:", repr(secret))
print("html in json:", json.dumps(html.escape(secret)))
print("html twice:", html.escape(html.escape(secret)))
print("html in a url:", urllib.parse.quote(html.escape(secret), safe=""))
print("key:", key.replace("\n", "\t\t"))
print("key:", key.replace("\n", "\n\n   "))
print("key in json:", json.dumps(key))
print("canary-after")
"""


def setUpModule():
    test_procmon_tools.setUpModule()


def forms(secret):
    """What the service prints, besides the secret itself."""
    return {
        "json": json.dumps(secret)[1:-1],
        "quote": urllib.parse.quote(secret, safe=""),
        "quote_plus": urllib.parse.quote_plus(secret),
        "html": html.escape(secret),
        "html, quote=False": html.escape(secret, quote=False),
        "repr": repr(secret)[1:-1],
        "html in json": json.dumps(html.escape(secret))[1:-1],
        "html twice": html.escape(html.escape(secret)),
        "html in a url": urllib.parse.quote(html.escape(secret), safe=""),
    }


class RedactionTest(ProcmonToolsTest):
    def test_python_encodings_of_a_secret_never_reach_the_logs(self):
        started = self.start_owned({
            "argv": [sys.executable, "-c", SERVICE, SECRET, KEY],
            "secrets": [SECRET, KEY],
        })
        ended = self.call(wait_process, {
            "monitor_id": started["monitor_id"],
            "condition": {"kind": "exit"},
            "timeout_seconds": WAIT_SECONDS,
        })
        self.assertEqual(ended["outcome"], "satisfied", ended)
        self.assertEqual(ended["observation"]["exit_code"], 0, ended)
        text = self.call(process_logs, {"monitor_id": started["monitor_id"]})["text"]

        self.assertIn("canary-before", text)
        self.assertIn("canary-after", text)
        # Every form line is there, its value replaced by the marker.
        for label in ("as is:", "json:", "quote:", "quote_plus:", "html:", "repr:", "html in json:",
                      "html twice:", "html in a url:", "key:"):
            self.assertRegex(text, "(?m)^" + re.escape(label) + r""" ["']?\[REDACTED\]""")

        leaks = dict(forms(SECRET), secret=SECRET)
        leaks.update({"key " + k: v for k, v in forms(KEY).items()})
        # The pieces that would give a part of either away.
        leaks["first half"] = SECRET[: len(SECRET) // 2]
        leaks["key's short first line and the next"] = "abc\t\tsecond"
        leaks["key's second line"] = "second-line-of-the-key"
        for name, form in leaks.items():
            with self.subTest(form=name):
                self.assertNotIn(form, text)
                self.assert_not_stored(form)

    def assert_not_stored(self, form):
        """No file of the state directory holds form."""
        needle = form.encode()
        for path in Path(self.state_dir).rglob("*"):
            if path.is_file() and not path.is_symlink():
                try:
                    content = path.read_bytes()
                except OSError:
                    continue
                self.assertNotIn(needle, content, f"{path} holds a form of the secret")


if __name__ == "__main__":
    unittest.main()
