"""`--format openmetrics` of run, history and export, read back by a real parser: prometheus_client's OpenMetrics
parser (strict: `# EOF`, one block per family) and its Prometheus text-format parser (what node_exporter's textfile
collector and a Pushgateway read). Label values with a double quote, a backslash and a newline must come back as
they were written. Needs $GPUBENCH_BINARY and prometheus_client (Debian: python3-prometheus-client)."""
import copy
import glob
import json
import os
import subprocess
import tempfile
import unittest

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_prometheus

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BINARY = os.environ["GPUBENCH_BINARY"]
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "records")
HOSTILE = 'rack "7"\\slot\nB'  # a double quote, a backslash and a newline


def gpubench(*args):
    p = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def families(text):
    """Both parsers; the OpenMetrics one's families by name."""
    om = {f.name: f for f in parse_openmetrics(text)}
    prom = list(parse_prometheus(text))
    return om, prom


class OpenMetricsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        # Two committed records, one of them with hostile text in a label and in its device name.
        src = sorted(glob.glob(os.path.join(FIXTURES, "aa-noise", "*.json")))[:2]
        self.assertEqual(len(src), 2)
        os.makedirs(os.path.join(self.dir, "records"))
        for i, path in enumerate(src):
            with open(path) as f:
                r = json.load(f)
            if i == 1:
                r = copy.deepcopy(r)
                r["environment"]["hostname"] = HOSTILE
                r["environment"]["device_name"] = HOSTILE
            with open(os.path.join(self.dir, "records", f"r{i}.json"), "w") as f:
                json.dump(r, f)

    def tearDown(self):
        self.tmp.cleanup()

    def test_export_parses_with_both_parsers_and_labels_round_trip(self):
        rc, out, err = gpubench("export", os.path.join(self.dir, "records"), "--per", "run", "--format", "openmetrics")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.endswith("# EOF\n"))
        om, prom = families(out)
        self.assertIn("gpubench_samples_per_s", om)
        self.assertEqual(om["gpubench_samples_per_s"].type, "gauge")
        samples = om["gpubench_samples_per_s"].samples
        self.assertEqual(len(samples), 2)
        hosts = {s.labels["host"] for s in samples}
        self.assertIn(HOSTILE, hosts)
        self.assertIn(HOSTILE, {s.labels["device_model"] for s in samples})
        for s in samples:
            self.assertGreater(s.value, 0)
            for key in ("model", "precision", "batch_size", "device_model", "scenario_id", "start_time_utc"):
                self.assertIn(key, s.labels)
        self.assertEqual({f.name for f in prom}, set(om))
        # per epoch: an epoch label, and the samples still distinct
        rc, out, err = gpubench("export", os.path.join(self.dir, "records"), "--format", "openmetrics")
        self.assertEqual(rc, 0, err)
        om, _ = families(out)
        epochs = [s.labels["epoch"] for s in om["gpubench_samples_per_s"].samples]
        self.assertGreaterEqual(len(epochs), 2)

    def history_of_the_records(self):
        """The records in a store, and `history --format openmetrics` of it parsed: (store, OpenMetrics families)."""
        store = os.path.join(self.dir, "s.db")
        rc, _, err = gpubench("db", "add", store, os.path.join(self.dir, "records"))
        if rc != 0 and "SQLite" in err:
            self.skipTest("built without SQLite")
        self.assertEqual(rc, 0, err)
        rc, out, err = gpubench("history", store, "--format", "openmetrics")
        self.assertEqual(rc, 0, err)
        return store, families(out)[0]

    def test_history_from_a_store_parses_and_names_each_run(self):
        _, om = self.history_of_the_records()
        samples = om["gpubench_samples_per_s"].samples
        self.assertEqual(len(samples), 2)
        self.assertEqual(len({s.labels["run_id"] for s in samples}), 2)
        self.assertIn(HOSTILE, {s.labels["device_model"] for s in samples})

    def test_history_exposes_failed_runs_and_labels_runs_as_run_and_export_do(self):
        # A failed run is a sample of gpubench_run_ok (0), and every run has the labels docs/fleet.md promises.
        with open(os.path.join(self.dir, "records", "r0.json")) as f:
            failed = json.load(f)
        failed["status"], failed["reason"] = "oom", "CUDA out of memory"
        failed["environment"]["start_time_utc"] = "2026-11-02T00:00:00Z"
        with open(os.path.join(self.dir, "records", "r2.json"), "w") as f:
            json.dump(failed, f)
        store, om = self.history_of_the_records()
        ok = om["gpubench_run_ok"].samples
        self.assertEqual(sorted(s.value for s in ok), [0, 1, 1])
        for s in ok:
            for label in ("model", "mode", "precision", "batch_size", "kernels", "data", "device_model", "scenario_id",
                          "host", "driver_version", "libtorch_version", "gpubench_revision", "start_time_utc",
                          "repeat", "status", "run_id"):
                self.assertIn(label, s.labels)
            self.assertEqual(s.labels["mode"], "train")
            self.assertTrue(s.labels["repeat"].isdigit(), s.labels)
        self.assertIn(HOSTILE, {s.labels["host"] for s in ok})
        self.assertEqual({s.labels["status"] for s in ok if s.value == 0}, {"oom"})
        for command in (("run",), ("history", store), ("export", store)):
            rc, out, _ = gpubench(*command, "--help")
            self.assertIn("openmetrics", out, command)

    def test_a_run_prints_its_metrics_and_a_textfile_collector_file_is_written_whole(self):
        prom_file = os.path.join(self.dir, "gpubench.prom")
        rc, out, err = gpubench("run", "--config", os.path.join(ROOT, "tests", "data", "tiny_resnet.yaml"), "--epochs",
                                "1", "--dataset-size", "4", "--out", os.path.join(self.dir, "run.json"), "--format",
                                "openmetrics", "--save", prom_file)
        self.assertEqual(rc, 0, err)
        om, _ = families(out)
        self.assertEqual(om["gpubench_run_ok"].samples[0].value, 1)
        self.assertEqual(om["gpubench_samples_per_s"].samples[0].labels["model"], "resnet50")
        with open(prom_file) as f:
            self.assertEqual(f.read(), out)  # .prom is the textfile collector's extension: same text, written atomically

    def test_a_command_without_metrics_refuses_the_format(self):
        rc, _, err = gpubench("compare", os.path.join(self.dir, "records", "r0.json"),
                              os.path.join(self.dir, "records", "r1.json"), "--format", "openmetrics")
        self.assertNotEqual(rc, 0)
        self.assertIn("openmetrics", err)


if __name__ == "__main__":
    unittest.main()
