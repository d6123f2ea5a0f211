"""The HTML report in a real browser: headless Chromium lays it out at 1280 px without overflow.

Skipped where Debian's ``chromium`` is not installed (``apt-get install -y chromium``). One
launch, bounded by a timeout: the bundled example is run with a judge that babbles under a long
model name (the worst a small local model gives a report: long names, unparsed replies), its
report is copied with a measuring script added (the report itself has none, and its
Content-Security-Policy would block one), and Chromium prints the DOM after the script ran.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
WIDTH = 1280

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium")

BABBLER = '''
from tinyeval.models import Reply


def SmolLM2_135M_Instruct_served_locally_babbling(prompt, *, sample=0):
    """A judge as a very small model answers: a verdict, a ramble, or nothing at all."""
    kind = len(prompt) % 3
    if kind == 0:
        text = "PASS\\nlooks fine"
    elif kind == 1:
        text = "Well, as an assistant I would say the response is sort of fine, maybe. " * 8
    else:
        text = ""
    return Reply(text, usage={"input_tokens": 300, "output_tokens": 40},
                 model="SmolLM2-135M-Instruct-Q8_0-GGUF-served-by-a-local-server")
'''

# Opens every collapsed case first, so what they hold is measured too; then writes what it
# measured into the page, where --dump-dom prints it.
MEASURE = """<script>
document.querySelectorAll("details").forEach(function (d) { d.open = true; });
var right = 0, widest = "";
document.querySelectorAll("body *").forEach(function (e) {
  var r = e.getBoundingClientRect().right;
  if (r > right) { right = r; widest = e.tagName + "." + e.className; }
});
var out = document.createElement("pre");
out.id = "measured";
out.textContent = JSON.stringify({
  innerWidth: window.innerWidth,
  scrollWidth: document.documentElement.scrollWidth,
  right: right,
  widest: widest,
  details: document.querySelectorAll("details[open]").length
});
document.body.appendChild(out);
</script>"""


def test_the_bundled_example_fits_1280_px_with_long_names_and_unparsed_replies(
    tmp_path: Path,
) -> None:
    (tmp_path / "babbler.py").write_text(BABBLER, encoding="utf-8")
    page = tmp_path / "report.html"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
           "PYTHONIOENCODING": "utf-8"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "tinyeval", "run", "examples/cases.jsonl",
         "--criterion", "unsupported-claims", "--judge-category", "support_answers",
         "--judge-model", "py:babbler:SmolLM2_135M_Instruct_served_locally_babbling",
         "--threshold", "amount_extraction=1.0", "--default-threshold", "0.5",
         "--out", str(tmp_path / "rows.jsonl"), "--html", str(page), "-q", "--no-cache"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # amount_extraction blocks, as in the README
    report = page.read_text(encoding="utf-8")
    assert "SmolLM2-135M-Instruct-Q8_0-GGUF" in report and "no verdict (unparsed)" in report
    # The copy measured: without the CSP (it forbids any script) and with the script appended.
    csp = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n')
    assert csp.search(report)
    probe = tmp_path / "probe.html"
    probe.write_text(csp.sub("", report).replace("</body>", MEASURE + "\n</body>"), "utf-8")
    profile = tmp_path / "profile"
    browser = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", "--hide-scrollbars",
         f"--window-size={WIDTH},2000", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert browser.returncode == 0, browser.stderr[-2000:]
    found = re.search(r'<pre id="measured">(.*?)</pre>', browser.stdout, re.S)
    assert found, "the measuring script did not run"
    measured = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert measured["innerWidth"] == WIDTH  # laid out at the width asked for
    assert measured["details"] > 0  # the collapsed cases were opened and measured too
    assert measured["scrollWidth"] <= WIDTH, measured
    assert measured["right"] <= WIDTH, measured  # nothing pokes out, even where it is clipped
