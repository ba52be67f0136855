#!/usr/bin/env python3
"""`gpubench report` of committed H200 records, opened in headless Chromium at 1,280 px, checked on its DOM.

Two report sizes: about 20 records (training and inference of three models) and every gpubench record among the
test fixtures (tests/fixtures/records, with h200-peaks.tar.gz unpacked: over 150). A script added to a copy of the page measures what a reader sees (the page and each table against the
viewport, with every folded <details> opened, each chart's decoded size and its labels) and writes it into the DOM,
which Chromium prints (--dump-dom). A screenshot of each page (up to its first 9,000 px) is taken too: into
$GPUBENCH_REPORT_SCREENSHOTS when set (docs/report/ holds the committed ones), else into a temporary folder.

Needs GPUBENCH_BINARY (the gpubench to test), python3 with matplotlib, and Chromium (Debian: chromium, which
scripts/bootstrap.sh installs; GPUBENCH_CHROMIUM names another binary).
"""
import glob
import html
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "records")
WIDTH = 1280

# Measures the page once it has loaded; the result goes into <pre id="gpubench-check"> as JSON.
CHECK_SCRIPT = r"""
<script>
window.addEventListener('load', () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const text = e => (e ? e.textContent.trim() : '');
  const tables = [...document.querySelectorAll('table')].map(t => {
    const prev = t.previousElementSibling;
    return {
      id: t.dataset.table || '',
      caption: prev && prev.classList.contains('caption') ? text(prev) : '',
      right: t.getBoundingClientRect().right,
      headers: [...t.querySelectorAll('th')].map(text),
      rows: [...t.querySelectorAll('tr')].slice(1).map(r => [...r.querySelectorAll('td')].map(text)),
    };
  });
  const charts = [...document.querySelectorAll('img')].map(i => ({
    chart: i.dataset.chart || '', width: i.naturalWidth, height: i.naturalHeight, complete: i.complete,
    labels: JSON.parse(i.dataset.labels || '[]'),
  }));
  const out = {
    viewport: document.documentElement.clientWidth,
    page_width: document.documentElement.scrollWidth,
    page_height: document.documentElement.scrollHeight,
    h2: [...document.querySelectorAll('h2')].map(text),
    h3: [...document.querySelectorAll('h3')].map(text),
    tables, charts,
  };
  const pre = document.createElement('pre');
  pre.id = 'gpubench-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def chromium():
    for c in (os.environ.get("GPUBENCH_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if c and shutil.which(c):
            return shutil.which(c)
    return None


def record_folders(unpacked):
    """Every fixture folder that holds gpubench run records (report reads a folder's records, not its subfolders), and
    those of the fixtures' record archives, unpacked into `unpacked`."""
    for archive in glob.glob(os.path.join(FIXTURES, "*.tar.gz")):
        with tarfile.open(archive) as t:
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # the archives are our own fixtures
            t.extractall(os.path.join(unpacked, os.path.basename(archive)[:-7]), **safe)
    folders = set()
    for p in (glob.glob(os.path.join(FIXTURES, "**", "*.json"), recursive=True) +
              glob.glob(os.path.join(unpacked, "**", "*.json"), recursive=True)):
        try:
            with open(p) as f:
                if json.load(f).get("schema") == "gpubench.run":
                    folders.add(os.path.dirname(p))
        except (ValueError, AttributeError):
            continue
    return sorted(folders)


def browser(args, height=2400, timeout=120):
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
            "--no-first-run", "--disable-dev-shm-usage", f"--window-size={WIDTH},{height}"]
    return subprocess.run(base + args, capture_output=True, text=True, timeout=timeout)


class ReportInBrowser:
    """Builds one report, loads it in Chromium and keeps what the page measured."""

    def __init__(self, name, folders, work):
        self.name, self.out = name, os.path.join(work, name)
        r = subprocess.run([os.environ["GPUBENCH_BINARY"], "report", *folders, "-o", self.out, "--title",
                            f"gpubench report: {name}", "-q"], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise AssertionError(f"gpubench report failed ({r.returncode}): {r.stderr[-2000:]}")
        with open(os.path.join(self.out, "groups.json")) as f:
            self.groups = json.load(f)["scenarios"]
        with open(os.path.join(self.out, "report.html")) as f:
            page = f.read()
        probe = os.path.join(self.out, "probe.html")
        with open(probe, "w") as f:
            f.write(page.replace("</body>", CHECK_SCRIPT + "</body>"))
        r = browser(["--virtual-time-budget=20000", "--dump-dom", "file://" + probe])
        m = re.search(r'<pre id="gpubench-check">(.*?)</pre>', r.stdout, re.S)
        if not m:
            raise AssertionError(f"Chromium printed no measurement: {r.stderr[-2000:]}")
        self.page = json.loads(html.unescape(m.group(1)))
        shots = os.environ.get("GPUBENCH_REPORT_SCREENSHOTS") or self.out
        os.makedirs(shots, exist_ok=True)
        self.screenshot = os.path.join(shots, f"report-{name}.png")
        # The whole page, folded tables folded, up to 9,000 px (the large report's first screens).
        with open(os.path.join(self.out, "report.html")) as f:
            closed = f.read()
        browser([f"--screenshot={self.screenshot}", "file://" + os.path.join(self.out, "report.html")],
                height=min(9000, max(900, self.closed_height(closed))))

    def closed_height(self, page):
        """The page's height with its <details> folded, as a reader first sees it (measured, not guessed)."""
        probe = os.path.join(self.out, "height.html")
        script = CHECK_SCRIPT.replace("document.querySelectorAll('details').forEach(d => { d.open = true; });", "")
        with open(probe, "w") as f:
            f.write(page.replace("</body>", script + "</body>"))
        r = browser(["--virtual-time-budget=20000", "--dump-dom", "file://" + probe])
        m = re.search(r'<pre id="gpubench-check">(.*?)</pre>', r.stdout, re.S)
        return json.loads(html.unescape(m.group(1)))["page_height"] if m else 2400

    def tables(self, table_id):
        return [t for t in self.page["tables"] if t["id"] == table_id]


def column(table, header):
    """Index of the column whose header starts with `header`."""
    for i, h in enumerate(table["headers"]):
        if h.startswith(header):
            return i
    raise AssertionError(f"no column '{header}' in {table['headers']}")


@unittest.skipUnless(os.environ.get("GPUBENCH_BINARY"), "GPUBENCH_BINARY names the gpubench to test")
class ReportBrowserTest(unittest.TestCase):
    reports = {}

    @classmethod
    def setUpClass(cls):
        if chromium() is None:
            raise AssertionError("Chromium is needed for the report's browser test (Debian: apt-get install chromium; "
                                 "scripts/bootstrap.sh installs it) or GPUBENCH_CHROMIUM")
        cls.work = tempfile.mkdtemp(prefix="gpubench-report-browser-")
        small = [os.path.join(FIXTURES, "llm-inference", d) for d in ("1-train-unet", "2-llm-inference")]
        cls.reports["small"] = ReportInBrowser("20-records", small, cls.work)
        cls.reports["large"] = ReportInBrowser("all-records", record_folders(os.path.join(cls.work, "unpacked")), cls.work)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def each(self):
        for name, r in self.reports.items():
            with self.subTest(report=name):
                yield r

    def test_the_large_report_has_at_least_150_records(self):
        runs = sum(len(g["paths"]) for g in self.reports["large"].groups)
        self.assertGreaterEqual(runs, 150)

    def test_a_headline_names_the_gpu_and_its_driver(self):
        for r in self.each():
            self.assertEqual(r.page["h2"][0], "Headline")
            self.assertIn("NVIDIA H200", r.page["h3"])
            env = r.tables("environment")
            self.assertTrue(env)
            values = {row[0]: row[1] for row in env[0]["rows"]}
            self.assertEqual(env[0]["headers"][1], "NVIDIA H200")
            self.assertRegex(values["NVIDIA driver"], r"\d+\.\d+")
            for key in ("CUDA runtime", "cuDNN", "LibTorch", "power limit", "dates (UTC)"):
                self.assertNotEqual(values.get(key, "not recorded"), "not recorded", key)

    def test_no_table_is_wider_than_a_1280_px_viewport(self):
        for r in self.each():
            self.assertLessEqual(r.page["viewport"], WIDTH)
            self.assertLessEqual(r.page["page_width"], r.page["viewport"], "the page scrolls sideways")
            for t in r.page["tables"]:
                self.assertLessEqual(t["right"], r.page["viewport"] + 0.5, f"{t['id']} {t['caption']}")

    def test_repeats_collapse_to_one_row_with_n_and_an_interval(self):
        for r in self.each():
            rows = [(t, row) for t in r.tables("headline") for row in t["rows"]]
            self.assertEqual(len(rows), len(r.groups), "one headline row per scenario identity")
            labels = [row[0] for _, row in rows]
            self.assertEqual(len(labels), len(set(labels)), "two headline rows read the same")
            runs = sum(int(row[column(t, "runs")].split()[0]) for t, row in rows)
            self.assertEqual(runs, sum(len(g["ok_paths"]) for g in r.groups))
            repeated = [(t, row) for t, row in rows if int(row[column(t, "runs")].split()[0]) >= 2]
            self.assertTrue(repeated, "the committed records repeat scenarios")
            for t, row in repeated:
                self.assertRegex(row[column(t, "± 95 %")], r"^[\d.,]+$", row[0])

    def test_training_and_inference_are_separate_groups_with_one_unit_each(self):
        for r in self.each():
            captions = [t["caption"] for t in r.tables("headline")]
            self.assertTrue(any(c.startswith("Training") for c in captions))
            self.assertTrue(any(c.startswith("Inference") for c in captions))
            for t in r.tables("headline"):
                mode = {"Training": " train ", "Inference": " inference ", "Generation": " generate "}[
                    t["caption"].split(",")[0]]
                unit = re.search(r"throughput in (\S+):", t["caption"]).group(1)
                self.assertIn(f"({unit})", t["headers"][column(t, "throughput")])
                for row in t["rows"]:
                    self.assertIn(mode, row[0])

    def test_every_chart_is_present_decoded_and_labels_none_twice(self):
        for r in self.each():
            charts = {c["chart"]: c for c in r.page["charts"]}
            for name in ("throughput.png", "step_time.png"):
                self.assertIn(name, charts)
            for c in r.page["charts"]:
                self.assertTrue(c["complete"] and c["width"] > 100 and c["height"] > 100, c["chart"])
                self.assertTrue(c["labels"], c["chart"])
                dupes = sorted({x for x in c["labels"] if c["labels"].count(x) > 1})
                self.assertEqual(dupes, [], c["chart"])
            with open(r.screenshot, "rb") as f:
                self.assertTrue(f.read(8).startswith(b"\x89PNG"))
        # The one committed telemetry trace: its record names an absolute path on the GPU machine that is gone here,
        # and the trace is found beside the record.
        charts = {c["chart"]: c for c in self.reports["large"].page["charts"]}
        self.assertIn("telemetry.png", charts)
        self.assertEqual(len(charts["telemetry.png"]["labels"]), 1)


if __name__ == "__main__":
    unittest.main()
