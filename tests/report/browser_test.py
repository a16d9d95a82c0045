#!/usr/bin/env python3
"""report.html in a real browser: Debian's chromium, headless.

For each report (a short Atlas run, the prefill/decode pools scenario of
tests/scenarios, a capacity run's capacity.html, a sweep's sweep.html, validate's page of
three small result files and the built-in Atlas plan's report.html) it checks that
  - the page loads with no console message at all (the page has no script, and its
    Content-Security-Policy turns any attempt to load something from elsewhere into a
    console error), first proving on a page that logs an error that such a message is
    caught;
  - --dump-dom shows every section of the page, each with a chart or a table;
  - a screenshot is not blank: the header band has the header's colour, the page
    background has its own, and the sections hold enough pixels of neither (charts,
    text), in several regions.
Skips (exit 77) with a message where chromium is absent. Standard library only (the
PNG is decoded here with zlib).

  browser_test.py --fleetplan BIN [--work DIR] [--atlas-duration 20s]
                  [--screenshot-out FILE] [--scale 0.5] [--height 2400]  # keep the Atlas screenshot
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The simulation page's sections (report/simulation_page.h), in order.
SECTIONS = ["verdict", "latency", "e2e-by-output", "timeseries", "replicas", "prefix-cache", "kv-transfer", "inputs"]

# The capacity page's sections (report/capacity_page.h), in order.
CAPACITY_SECTIONS = ["decision", "requirements", "losses", "placement", "simulated", "inputs"]

# A quick capacity spec: the built-in Atlas, a declared per-replica rate, a short
# verification run through the loss of one of two equal domains.
CAPACITY_SPEC = """version: 1
scenario: {builtin: atlas}
demand: {us-east: 8/s, us-west: 4/s}
domains:
  us-east-a: {region: us-east, gpus: 64}
  us-east-b: {region: us-east, gpus: 64}
  us-west-a: {region: us-west, gpus: 32}
survive: largest-domain
replica_capacity: {rate: 2/s}
layouts: [{tp: 4}, {tp: 8}]
price: {on_demand: 4.10/gpu-h}
verify: {loss_at: 30s, duration: 60s}
"""

# The sweep page's sections (report/sweep_page.h), in order, and a quick sweep with a
# max-rate search.
SWEEP_SECTIONS = ["summary", "configurations", "pareto", "max-rate", "inputs"]
SWEEP_SPEC = """version: 1
base: {builtin: atlas}
overrides: {workload.duration: 30s, hardware.nodes: 4}
axes:
  deployment.replicas: [2, 4]
  router.policy: [round-robin, cache-aware]
search:
  max_rate: {axis: workload.arrival.rate, low: 1/s, high: 32/s, attainment: {interactive: 0.9}, resolution: 10%}
"""

# The plan page's sections (report/plan_page.h), in order, and the built-in bundle's --as-of.
PLAN_SECTIONS = ["decision", "checks", "inputs", "fleet", "model-error", "simulation", "gates", "rollout", "sensitivity", "digest"]
PLAN_AS_OF = "2026-12-01T00:00:00Z"

# The validate page's sections (report/validate_page.h), in order; a setup and three
# small vllm bench serve result files (two rates, one sent all at once).
VALIDATE_SECTIONS = ["summary", "points", "ttft", "tpot", "notes"]
VALIDATE_SETUP = """model: meta-llama/Llama-3.1-8B-Instruct
gpu: h100-sxm-80g
engine: {max_num_batched_tokens: 2048, enable_prefix_caching: true}
"""


def validate_result(rate, n=24):
    """A detailed result file: n requests of growing lengths, made-up times."""
    return {
        "request_rate": rate, "burstiness": 1.0, "max_concurrency": None, "completed": n,
        "input_lens": [100 + 40 * i for i in range(n)], "output_lens": [20 + 5 * i for i in range(n)],
        "ttfts": [0.03 + 0.001 * i for i in range(n)],
        "itls": [[0.008] * (19 + 5 * i) for i in range(n)], "errors": [""] * n,
    }


# Colours of the page's stylesheet (report/page.cc).
HEADER = (0x1D, 0x23, 0x30)
BACKGROUND = (0xF6, 0xF7, 0xF9)

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
]


def find_chromium():
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def run_chromium(chromium, work, args, url):
    """Runs chromium with a fresh profile; returns (stdout, console lines)."""
    profile = tempfile.mkdtemp(prefix="profile-", dir=work)
    try:
        p = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
                           capture_output=True, text=True, timeout=90)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    console = [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
    if p.returncode != 0:
        raise AssertionError(f"chromium exited {p.returncode}: {p.stderr[-2000:]}")
    return p.stdout, console


# ---- PNG -------------------------------------------------------------------------

def _add_bytes(x, y, n):
    """Bytewise (x + y) mod 256 of two n-byte strings, in big-integer arithmetic (SWAR)."""
    low = int.from_bytes(b"\x7f" * n, "big")
    high = int.from_bytes(b"\x80" * n, "big")
    a = int.from_bytes(x, "big")
    b = int.from_bytes(y, "big")
    return (((a & low) + (b & low)) ^ ((a ^ b) & high)).to_bytes(n, "big")


def _unfilter_sub(line, channels):
    """Prefix sums per channel (filter 1) by doubling shifts: log2(width) SWAR additions."""
    n = len(line)
    shift = channels
    while shift < n:
        line = _add_bytes(line, bytes(shift) + line[:n - shift], n)
        shift *= 2
    return line


class Png:
    """An 8-bit RGB or RGBA PNG, decoded; pixel(x, y) is an (r, g, b) tuple."""

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        if data[:8] != b"\x89PNG\r\n\x1a\n":
            raise AssertionError(f"{path}: not a PNG")
        pos = 8
        idat = b""
        color = None
        while pos < len(data):
            length, kind = struct.unpack(">I4s", data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + length]
            pos += 12 + length
            if kind == b"IHDR":
                self.width, self.height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
                if depth != 8 or color not in (2, 6) or interlace != 0:
                    raise AssertionError(f"{path}: unsupported PNG (depth {depth}, colour type {color})")
            elif kind == b"IDAT":
                idat += body
            elif kind == b"IEND":
                break
        ch = self.channels = 3 if color == 2 else 4
        raw = zlib.decompress(idat)
        stride = self.width * ch
        self.rows = []
        prev = bytes(stride)
        for y in range(self.height):
            at = y * (stride + 1)
            kind = raw[at]
            line = raw[at + 1:at + 1 + stride]
            if kind == 1:
                line = _unfilter_sub(line, ch)
            elif kind == 2:
                line = _add_bytes(line, prev, stride)
            elif kind in (3, 4):
                out = bytearray(line)
                for x in range(stride):
                    a = out[x - ch] if x >= ch else 0
                    b = prev[x]
                    if kind == 3:
                        out[x] = (out[x] + (a + b) // 2) & 0xFF
                    else:
                        c = prev[x - ch] if x >= ch else 0
                        p = a + b - c
                        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                        out[x] = (out[x] + (a if pa <= pb and pa <= pc else (b if pb <= pc else c))) & 0xFF
                line = bytes(out)
            self.rows.append(line)
            prev = line

    def pixel(self, x, y):
        at = x * self.channels
        return tuple(self.rows[y][at:at + 3])


def near(pixel, colour, tolerance=6):
    return all(abs(p - c) <= tolerance for p, c in zip(pixel, colour))


def check_screenshot(path, name):
    png = Png(path)
    width, height = png.width, png.height
    # The header band (its top rows, away from the text) is the header's colour.
    assert near(png.pixel(width - 10, 3), HEADER), f"{name}: header pixel {png.pixel(width - 10, 3)}, expected {HEADER}"
    # The page background shows at the left margin below the navigation.
    assert near(png.pixel(2, height // 2), BACKGROUND), f"{name}: margin pixel {png.pixel(2, height // 2)}"
    # Regions down the page: each holds ink (neither background nor white): charts, text.
    regions = 0
    band = height // 8
    for top in range(height // 16, height - band, band):
        ink = 0
        for y in range(top, top + band, 2):
            for x in range(20, width - 20, 2):
                p = png.pixel(x, y)
                if not near(p, BACKGROUND, 3) and not near(p, (255, 255, 255), 3):
                    ink += 1
        regions += 1
        assert ink > 100, f"{name}: the region at y={top}..{top + band} is blank ({ink} inked samples)"
    assert regions >= 6, f"{name}: only {regions} regions checked"
    # Colour: the palette's blue and vermilion appear (lines and bars).
    colours = {png.pixel(x, y) for y in range(0, height, 2) for x in range(0, width, 2)}
    for wanted in ((0x00, 0x72, 0xB2), (0xD5, 0x5E, 0x00)):
        assert any(near(c, wanted, 12) for c in colours), f"{name}: no pixel of the palette colour {wanted}"


# ---- the checks ------------------------------------------------------------------

def check_console_detector(chromium, work):
    page = os.path.join(work, "console-error.html")
    with open(page, "w") as f:
        f.write('<!DOCTYPE html><html><body><script>console.error("fleetplan-browser-test")</script></body></html>')
    _, console = run_chromium(chromium, work, ["--dump-dom"], "file://" + page)
    assert any("fleetplan-browser-test" in line for line in console), \
        "chromium did not report a console error: the no-console-message check would assert nothing"


def check_report(chromium, work, html, name, expect_charts, scale=0.5, height=2400, screenshot_out=None,
                 sections=SECTIONS):
    url = "file://" + os.path.abspath(html)
    dom, console = run_chromium(chromium, work, ["--dump-dom"], url)
    assert not console, f"{name}: console messages:\n" + "\n".join(console)
    found = re.findall(r'<section id="([a-z0-9-]+)">', dom)
    assert found == sections, f"{name}: sections {found}, expected {sections}"
    bodies = re.split(r'<section id="[a-z0-9-]+">', dom)[1:]
    for section, body in zip(sections, bodies):
        text = re.sub(r"<[^>]+>", " ", body.split("</section>")[0])
        assert len(text.split()) > 8, f"{name}: section {section} is empty"
    for section in expect_charts:
        body = bodies[sections.index(section)]
        assert "<svg" in body and ("<polyline" in body or "<rect" in body), f"{name}: section {section} has no chart"
    shot = os.path.join(work, name + ".png")
    # Drawn at half scale: a quarter of the pixels to decode, text and lines still inked.
    _, console = run_chromium(chromium, work, [f"--screenshot={shot}", f"--window-size=1280,{height}",
                                               f"--force-device-scale-factor={scale}"], url)
    assert not console, f"{name}: console messages while drawing:\n" + "\n".join(console)
    check_screenshot(shot, name)
    if screenshot_out:
        shutil.copyfile(shot, screenshot_out)
    print(f"ok: {name}: {len(sections)} sections, no console message, screenshot not blank "
          f"({os.path.getsize(html)} bytes of HTML)")


def simulate(fleetplan, out, *args):
    subprocess.run([fleetplan, "simulate", *args, "--out", out, "--quiet", "--no-requests", "--no-timeline"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    html = os.path.join(out, "report.html")
    assert os.path.exists(html), f"simulate wrote no {html}"
    return html


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fleetplan", required=True)
    ap.add_argument("--work", help="scratch folder (default: a temporary one)")
    ap.add_argument("--atlas-duration", default="20s", help="Atlas arrivals to simulate ('full': all 10 minutes)")
    ap.add_argument("--screenshot-out", help="copy the Atlas screenshot here")
    ap.add_argument("--scale", type=float, default=0.5, help="device scale factor of the Atlas screenshot")
    ap.add_argument("--height", type=int, default=2400, help="window height (CSS px) of the Atlas screenshot")
    args = ap.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("SKIP: chromium not found (scripts/install-deps.sh installs Debian's chromium)")
        return 77
    work = args.work or tempfile.mkdtemp(prefix="fleetplan-browser-")
    os.makedirs(work, exist_ok=True)
    start = time.monotonic()
    check_console_detector(chromium, work)
    atlas_args = [] if args.atlas_duration == "full" else ["--duration", args.atlas_duration]
    atlas = simulate(args.fleetplan, os.path.join(work, "atlas"), *atlas_args)
    pools = simulate(args.fleetplan, os.path.join(work, "pools"),
                     os.path.join(ROOT, "tests", "scenarios", "pools-disaggregation.yaml"))
    # The sections whose charts each run must show (Atlas has no pools; the pools scenario
    # no prefix cache).
    charts = ["latency", "e2e-by-output", "timeseries", "replicas"]
    check_report(chromium, work, atlas, "atlas", charts + ["prefix-cache"], args.scale, args.height,
                 args.screenshot_out)
    check_report(chromium, work, pools, "pools", charts + ["kv-transfer"])
    spec = os.path.join(work, "capacity.yaml")
    with open(spec, "w") as f:
        f.write(CAPACITY_SPEC)
    # Exit 1 is a verdict (this short run misses its targets in the cold first seconds): the
    # page is written either way.
    p = subprocess.run([args.fleetplan, "capacity", spec, "--out", os.path.join(work, "capacity"), "--quiet"],
                       stdout=subprocess.DEVNULL, timeout=300)
    assert p.returncode in (0, 1), f"fleetplan capacity exited {p.returncode}"
    check_report(chromium, work, os.path.join(work, "capacity", "capacity.html"), "capacity",
                 ["requirements", "losses", "placement", "simulated"], sections=CAPACITY_SECTIONS)
    spec = os.path.join(work, "sweep.yaml")
    with open(spec, "w") as f:
        f.write(SWEEP_SPEC)
    subprocess.run([args.fleetplan, "sweep", spec, "--out", os.path.join(work, "sweep"), "--quiet", "--jobs", "2"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    # A short page: the window ends where it does, so every band of the screenshot holds ink.
    check_report(chromium, work, os.path.join(work, "sweep", "sweep.html"), "sweep", ["pareto", "max-rate"],
                 height=1300, sections=SWEEP_SECTIONS)
    # validate --html: measured and simulated against rate.
    vdir = os.path.join(work, "validate")
    os.makedirs(vdir, exist_ok=True)
    with open(os.path.join(vdir, "setup.yaml"), "w") as f:
        f.write(VALIDATE_SETUP)
    results = []
    for name, rate in (("qps_1.json", 1.0), ("qps_4.json", 4.0), ("qps_inf.json", "inf")):
        results.append(os.path.join(vdir, name))
        with open(results[-1], "w") as f:
            json.dump(validate_result(rate), f)
    vhtml = os.path.join(vdir, "validate.html")
    subprocess.run([args.fleetplan, "validate", *results, "--setup", os.path.join(vdir, "setup.yaml"), "--html",
                    vhtml], check=True, stdout=subprocess.DEVNULL, timeout=300)
    check_report(chromium, work, vhtml, "validate", ["ttft", "tpot"], height=1300, sections=VALIDATE_SECTIONS)
    # Exit 1 is a verdict (the Atlas plan holds at canary-1): the page is written either way.
    p = subprocess.run([args.fleetplan, "plan", "--as-of", PLAN_AS_OF, "--out", os.path.join(work, "plan"), "--quiet"],
                       stdout=subprocess.DEVNULL, timeout=300)
    assert p.returncode in (0, 1), f"fleetplan plan exited {p.returncode}"
    plan = os.path.join(work, "plan", "report.html")
    check_report(chromium, work, plan, "plan", ["fleet", "model-error", "simulation", "rollout"], height=3600,
                 sections=PLAN_SECTIONS)
    with open(plan) as f:
        page = f.read()
    # The decision comes first, in large type, with its deciding reason and the digest.
    assert re.search(r'<section id="decision"><h2>Decision</h2>\s*<p class="verdict release \w+" id="release">'
                     r'Release: (pass|fail|hold)</p>', page), "plan: no release in large type at the top"
    assert "<h3>Deciding reasons</h3>" in page or "<h3>Every check passes</h3>" in page, "plan: no deciding reasons"
    with open(os.path.join(work, "plan", "plan.json")) as f:
        digest = json.load(f)["digest"]
    assert f"<code>{digest}</code>" in page, f"plan: the digest {digest} is not on the page"
    print(f"browser test: {time.monotonic() - start:.1f} s")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
