#!/usr/bin/env python3
"""The timeline HTML driven in a real browser: headless Chromium, when installed (else the test
is skipped, exit 77; scripts/setup.sh does not install it).

A wrapper page loads the timeline page in a frame, presses the zoom buttons and moves a
synthetic pointer onto the peak ring, and writes what it saw into its own DOM, which
`chromium --headless --dump-dom` prints. Checks: + scales the chart by 1.5 and says 150%, fit
restores it, and the readout under the ring shows the peak's bytes (summary --json) as the page
formats them.

usage: timeline_browser_check.py ANALYZE TRACEGEN WORKDIR
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys

WRAPPER = r"""<!DOCTYPE html><html><body>
<iframe id="f" src="timeline.html" width="1400" height="1000"></iframe>
<pre id="result">pending</pre>
<script>
document.getElementById('f').onload = function () {
  var d = this.contentDocument, w = this.contentWindow, out = {};
  try {
    var svg = d.querySelector('#zoombox svg');
    out.w0 = +svg.getAttribute('width');
    d.getElementById('zoom-in').click();
    out.w1 = +svg.getAttribute('width');
    out.level = d.getElementById('zoom-level').textContent;
    d.getElementById('zoom-reset').click();
    out.w2 = +svg.getAttribute('width');
    var r = svg.querySelector('g.peak circle').getBoundingClientRect();
    svg.dispatchEvent(new w.MouseEvent('mousemove', {
      clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true}));
    out.readout = d.getElementById('readout').textContent;
  } catch (e) {
    out.error = String(e);
  }
  document.getElementById('result').textContent = JSON.stringify(out);
};
</script></body></html>
"""


def page_bytes(v):
    """The page's own formatting of bytes (timeline_zoom.c)."""
    units, i = ["B", "KiB", "MiB", "GiB", "TiB"], 0
    while abs(v) >= 1024 and i < len(units) - 1:
        v /= 1024
        i += 1
    digits = 0 if i == 0 else 2 if v < 10 else 1 if v < 100 else 0
    return f"{v:.{digits}f} {units[i]}"


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def main():
    analyze, tracegen, work = sys.argv[1:4]
    chrome = browser()
    if not chrome:
        print("skipped: no chromium installed")
        return 77
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "run.mst")
    subprocess.run([tracegen, "--steps", "4", "--layers", "3", "-o", trace], check=True)
    subprocess.run([analyze, "timeline", trace, "-o", os.path.join(work, "timeline.html")],
                   check=True)
    peak = json.loads(subprocess.run([analyze, "summary", "--json", trace], check=True,
                                     capture_output=True, text=True).stdout)["peak_bytes"]
    wrapper = os.path.join(work, "wrapper.html")
    with open(wrapper, "w") as f:
        f.write(WRAPPER)
    dom = subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu",
                          "--allow-file-access-from-files", "--virtual-time-budget=5000",
                          "--dump-dom", "file://" + wrapper],
                         capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
    seen = json.loads(html.unescape(m.group(1))) if m else {"error": "no result: " + dom[-300:]}
    print(seen)
    failures = []
    if "error" in seen:
        failures.append(seen["error"])
    else:
        if abs(seen["w1"] - 1.5 * seen["w0"]) > 0.5 or seen["level"] != "150%":
            failures.append(f"zoom in: {seen}")
        if seen["w2"] != seen["w0"]:
            failures.append(f"fit: {seen}")
        want = "resident " + page_bytes(peak)
        if want not in seen["readout"]:
            failures.append(f"readout {seen['readout']!r} lacks {want!r}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
